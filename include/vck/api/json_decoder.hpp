// Typed JSON decoding without a DOM: a boost::json::basic_parser handler writes each token
// straight into the described struct it belongs to, with from_json's results (keys a struct
// does not model kept in its `unknown`, null members skipped, json::value members whole).
// It is a fast path only: a document it cannot decode exactly as from_json would (a type
// mismatch, a duplicate key, a null where a value is needed) makes it bail out, and the caller
// decodes the same bytes through the DOM and from_json, which raises the DecodeError.
// The DOM a root object keeps (its `unknown` members, json::value members) is built in one
// ObjectArena per root object, sealed when the object ends: decoding it and freeing it then
// cost no malloc and no free per value. Where the previous object's DOM was small (under
// kArenaFrom bytes), the arena would cost more memory than it saves time, and the object's
// DOM goes to the heap; every kArenaSample-th such object takes an arena again, to notice
// objects that grew.
#pragma once

#include <vck/api/json.hpp>
#include <vck/api/object_arena.hpp>

#include <boost/json/basic_parser_impl.hpp>

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace vck::api {

namespace sax {

class Handler;

/// How one C++ type takes a JSON value. Types decoded token by token set object/array/
/// scalar/string (null where that token is a type mismatch); captured types (json::value,
/// json::object, anything read_value hands to value_to that is not a described struct) set
/// only `done`, which gets the whole value as a DOM. Every function returns false to bail out.
struct SinkOps {
    bool (*object)(Handler&, void* target) = nullptr;  // `{`: pushes a frame
    bool (*array)(Handler&, void* target) = nullptr;   // `[`: pushes a frame
    bool (*scalar)(void* target, const json::value& v) = nullptr;  // number, bool, null
    bool (*string)(void* target, std::string_view s) = nullptr;
    bool (*done)(Handler&, void* target, json::value&& v) = nullptr;
    bool keeps_dom = false;  // `done` keeps the value as it is: it is built in the object's arena
};

struct Sink {
    const SinkOps* ops = nullptr;
    void* target = nullptr;
};

struct Frame;

/// An open object or array.
struct FrameOps {
    bool (*key)(Handler&, Frame&, std::string_view) = nullptr;  // objects only
    /// The sink of the member or element that begins now (`is_null`: it is a null);
    /// `skip` drops the value instead.
    bool (*child)(Handler&, Frame&, bool is_null, Sink& out, bool& skip) = nullptr;
};

enum FrameFlags : std::uint8_t { kRootObject = 1, kDropManagedFields = 2 };

struct Frame {
    const FrameOps* ops;
    void* target;
    std::uint64_t seen = 0;  // struct members assigned (a repeated key bails out)
    int member = -1;         // struct: the member the pending value is for; kUnknown, kSkip
    std::uint8_t flags = 0;
};

constexpr int kUnknown = -1;
constexpr int kSkip = -2;

/// The basic_parser handler. One document per start(); failed() afterwards means "decode
/// these bytes through the DOM instead" (the target may then hold a partial result).
class Handler {
public:
    static constexpr std::size_t max_object_size = std::size_t(-1);
    static constexpr std::size_t max_array_size = std::size_t(-1);
    static constexpr std::size_t max_key_size = std::size_t(-1);
    static constexpr std::size_t max_string_size = std::size_t(-1);

    /// `drop_managed_fields`: the root object's metadata.managedFields is skipped unread, as
    /// if erased from the JSON before decoding.
    void start(Sink root, bool drop_managed_fields) {
        end_arena();
        in_root_ = false;
        stack_.clear();
        root_ = root;
        root_begun_ = false;
        failed_ = false;
        skip_ = cap_ = 0;
        drop_managed_fields_ = drop_managed_fields;
        child_flags_ = 0;
        keybuf_.clear();
        strbuf_.clear();
    }
    bool failed() const { return failed_; }

    // ---- used by the sinks -----------------------------------------------------------------
    void push(Frame f) {
        if (f.flags & kRootObject) in_root_ = true;
        stack_.push_back(f);
    }
    /// Flags the value about to begin gets (root object; metadata to drop managedFields from).
    std::uint8_t child_flags() const { return child_flags_; }
    void set_child_flags(std::uint8_t f) { child_flags_ = f; }
    bool drop_managed_fields() const { return drop_managed_fields_; }
    /// The key of the pending unknown member or map entry.
    std::string key;
    static constexpr std::size_t kArenaFrom = 512;
    static constexpr unsigned kArenaSample = 64;

    /// The storage of the DOM the root object being decoded keeps: its arena (made on first
    /// use), or the heap's when the previous object's DOM was small. Outside a root object (a
    /// watch event's BOOKMARK or ERROR object), the heap's: such a value does not tell how
    /// large the next object will be.
    const json::storage_ptr& arena() {
        if (in_root_ && !live_ && !heap_) {
            if (arena_hint_ < kArenaFrom && ++small_ % kArenaSample != 0) heap_ = true;
            else arena_ = ObjectArena::make(arena_hint_, live_);
        }
        return arena_;
    }

    // ---- basic_parser callbacks ------------------------------------------------------------
    bool on_document_begin(boost::system::error_code&) { return true; }
    bool on_document_end(boost::system::error_code&) {
        end_arena();
        return true;
    }

    bool on_object_begin(boost::system::error_code&) { return open(false); }
    bool on_array_begin(boost::system::error_code&) { return open(true); }
    bool on_object_end(std::size_t n, boost::system::error_code&) { return close(false, n); }
    bool on_array_end(std::size_t n, boost::system::error_code&) { return close(true, n); }

    bool on_key_part(std::string_view s, std::size_t, boost::system::error_code&) {
        if (failed_ || skip_) return true;
        if (cap_) vs_.push_chars(s);
        else keybuf_.append(s);
        return true;
    }
    bool on_key(std::string_view s, std::size_t, boost::system::error_code&) {
        if (failed_ || skip_) return true;
        if (cap_) {
            vs_.push_key(s);
            return true;
        }
        std::string_view k = s;
        if (!keybuf_.empty()) {
            keybuf_.append(s);
            k = keybuf_;
        }
        auto& f = stack_.back();
        if (!f.ops->key(*this, f, k)) bail();
        keybuf_.clear();
        return true;
    }
    bool on_string_part(std::string_view s, std::size_t, boost::system::error_code&) {
        if (failed_ || skip_) return true;
        if (cap_) vs_.push_chars(s);
        else strbuf_.append(s);
        return true;
    }
    bool on_string(std::string_view s, std::size_t, boost::system::error_code&) {
        if (failed_ || skip_) return true;
        if (cap_) {
            vs_.push_string(s);
            return true;
        }
        std::string_view v = s;
        if (!strbuf_.empty()) {
            strbuf_.append(s);
            v = strbuf_;
        }
        Sink sink;
        bool skip = false;
        if (!begin(false, sink, skip)) bail();
        else if (!skip) {
            bool ok = sink.ops->done ? sink.ops->done(*this, sink.target,
                                                      json::value(json::string_view(v.data(), v.size()),
                                                                  sink.ops->keeps_dom ? arena() : json::storage_ptr()))
                      : sink.ops->string ? sink.ops->string(sink.target, v)
                                         : false;
            if (!ok) bail();
        }
        strbuf_.clear();
        return true;
    }
    bool on_number_part(std::string_view, boost::system::error_code&) { return true; }
    bool on_int64(std::int64_t i, std::string_view, boost::system::error_code&) {
        if (failed_ || skip_) return true;
        if (cap_) vs_.push_int64(i);
        else scalar(json::value(i));
        return true;
    }
    bool on_uint64(std::uint64_t u, std::string_view, boost::system::error_code&) {
        if (failed_ || skip_) return true;
        if (cap_) vs_.push_uint64(u);
        else scalar(json::value(u));
        return true;
    }
    bool on_double(double d, std::string_view, boost::system::error_code&) {
        if (failed_ || skip_) return true;
        if (cap_) vs_.push_double(d);
        else scalar(json::value(d));
        return true;
    }
    bool on_bool(bool b, boost::system::error_code&) {
        if (failed_ || skip_) return true;
        if (cap_) vs_.push_bool(b);
        else scalar(json::value(b));
        return true;
    }
    bool on_null(boost::system::error_code&) {
        if (failed_ || skip_) return true;
        if (cap_) vs_.push_null();
        else scalar(json::value(nullptr));
        return true;
    }
    bool on_comment_part(std::string_view, boost::system::error_code&) { return true; }
    bool on_comment(std::string_view, boost::system::error_code&) { return true; }

private:
    // Parsing goes on after a bail-out, so that syntax errors are still reported.
    void bail() { failed_ = true; }

    /// The sink of the value that begins now.
    bool begin(bool is_null, Sink& out, bool& skip) {
        child_flags_ = 0;
        if (stack_.empty()) {
            if (root_begun_ || is_null) return false;
            root_begun_ = true;
            child_flags_ = kRootObject;
            out = root_;
            return true;
        }
        auto& f = stack_.back();
        return f.ops->child(*this, f, is_null, out, skip);
    }

    bool open(bool array) {
        if (failed_) return true;
        if (skip_ || cap_) {
            ++(skip_ ? skip_ : cap_);
            return true;
        }
        Sink sink;
        bool skip = false;
        if (!begin(false, sink, skip)) bail();
        else if (skip) skip_ = 1;
        else if (sink.ops->done) {
            capture_ = sink;
            cap_ = 1;
            vs_.reset(sink.ops->keeps_dom ? arena() : json::storage_ptr());
        } else {
            auto fn = array ? sink.ops->array : sink.ops->object;
            if (!fn || !fn(*this, sink.target)) bail();
        }
        return true;
    }

    bool close(bool array, std::size_t n) {
        if (failed_) return true;
        if (skip_) {
            --skip_;
            return true;
        }
        if (cap_) {
            if (array) vs_.push_array(n);
            else vs_.push_object(n);
            if (--cap_ == 0 && !capture_.ops->done(*this, capture_.target, vs_.release())) bail();
            return true;
        }
        if (stack_.back().flags & kRootObject) {
            end_arena();
            in_root_ = false;
        }
        stack_.pop_back();
        return true;
    }

    /// Seals the arena of the root object that just ended; the next one starts with as many
    /// bytes as this one used, and a little more (or on the heap, if that is small).
    void end_arena() {
        heap_ = false;
        if (!live_) return;
        live_->seal();
        arena_hint_ = live_->used() + live_->used() / 16 + 32;
        live_ = nullptr;
        arena_ = json::storage_ptr();
    }

    void scalar(json::value v) {
        Sink sink;
        bool skip = false;
        if (!begin(v.is_null(), sink, skip)) return bail();
        if (skip) return;
        bool ok = sink.ops->done ? sink.ops->done(*this, sink.target, std::move(v))
                  : sink.ops->scalar ? sink.ops->scalar(sink.target, v)
                                     : false;
        if (!ok) bail();
    }

    std::vector<Frame> stack_;
    Sink root_;
    bool root_begun_ = false;
    bool failed_ = false;
    bool drop_managed_fields_ = false;
    std::uint8_t child_flags_ = 0;
    int skip_ = 0;  // depth inside a value being skipped
    int cap_ = 0;   // depth inside a value being captured into vs_
    Sink capture_;
    json::value_stack vs_;
    std::string keybuf_, strbuf_;  // keys and strings that arrived in parts
    json::storage_ptr arena_;      // the heap's while no arena is live
    ObjectArena* live_ = nullptr;  // arena_'s resource while a root object is being decoded
    bool heap_ = false;            // this root object's DOM goes to the heap
    bool in_root_ = false;         // a root object is being decoded
    std::size_t arena_hint_ = kArenaFrom;
    unsigned small_ = 0;           // objects that followed a small one
};

template <class T>
const SinkOps* sink_ops();

template <class T>
bool capture_done(Handler&, void* t, json::value&& v) {
    auto& out = *static_cast<T*>(t);
    // Assignment would copy into out's storage; out takes v's (the object's arena) instead.
    if constexpr (std::is_same_v<T, json::value>) {
        std::destroy_at(&out);
        std::construct_at(&out, std::move(v));
        return true;
    } else if constexpr (std::is_same_v<T, json::object>) {
        if (!v.is_object()) return false;
        std::destroy_at(&out);
        std::construct_at(&out, std::move(v.get_object()));
        return true;
    } else {
        try {
            detail::read_value(v, out);
            return true;
        } catch (...) {
            return false;
        }
    }
}

template <class T>
struct StringOps {
    static bool string(void* t, std::string_view s) {
        static_cast<T*>(t)->assign(s.data(), s.size());
        return true;
    }
};

template <class T>
struct ScalarOps {
    static bool scalar(void* t, const json::value& v) {
        auto& out = *static_cast<T*>(t);
        if constexpr (std::is_same_v<T, bool>) {
            if (!v.is_bool()) return false;
            out = v.get_bool();
        } else if constexpr (std::is_integral_v<T>) {
            std::error_code ec;
            auto n = v.to_number<T>(ec);
            if (ec) return false;
            out = n;
        } else {
            if (!v.is_number()) return false;
            out = v.to_number<T>();
        }
        return true;
    }
};

/// std::optional<X>: engaged by any value that begins (struct members' nulls never get here).
template <class T>
struct OptionalOps {
    using X = typename T::value_type;
    static X* engage(void* t) { return &static_cast<T*>(t)->emplace(); }
    static bool object(Handler& h, void* t) {
        auto f = sink_ops<X>()->object;
        return f && f(h, engage(t));
    }
    static bool array(Handler& h, void* t) {
        auto f = sink_ops<X>()->array;
        return f && f(h, engage(t));
    }
    static bool scalar(void* t, const json::value& v) {
        auto f = sink_ops<X>()->scalar;
        return f && f(engage(t), v);
    }
    static bool string(void* t, std::string_view s) {
        auto f = sink_ops<X>()->string;
        return f && f(engage(t), s);
    }
};

/// Maps keyed by string (StringMap, std::map): null entries skipped, as from_json does.
template <class T>
struct MapOps {
    static bool object(Handler& h, void* t) {
        static_cast<T*>(t)->clear();
        h.push(Frame{&frame, t});
        return true;
    }
    static bool key(Handler& h, Frame&, std::string_view k) {
        h.key.assign(k.data(), k.size());
        return true;
    }
    static bool child(Handler& h, Frame& f, bool is_null, Sink& out, bool& skip) {
        if (is_null) {
            skip = true;
            return true;
        }
        auto [it, inserted] = static_cast<T*>(f.target)->emplace(std::string(h.key), typename T::mapped_type{});
        if (!inserted) return false;  // a repeated key: the DOM keeps one of them
        out = Sink{sink_ops<typename T::mapped_type>(), &it->second};
        return true;
    }
    static constexpr FrameOps frame{&key, &child};
};

template <class T>
struct VectorOps {
    using X = typename T::value_type;
    static bool array(Handler& h, void* t) {
        static_cast<T*>(t)->clear();
        h.push(Frame{&frame, t});
        return true;
    }
    static bool child(Handler&, Frame& f, bool is_null, Sink& out, bool&) {
        const SinkOps* ops = sink_ops<X>();
        if (is_null && !ops->done) return false;  // from_json's answer (mostly an error) via the DOM
        auto& v = *static_cast<T*>(f.target);
        v.emplace_back();
        out = Sink{ops, &v.back()};
        return true;
    }
    static constexpr FrameOps frame{nullptr, &child};
};

template <class T>
struct StructOps {
    using Members = boost::describe::describe_members<T, boost::describe::mod_public | boost::describe::mod_inherited>;
    static constexpr std::size_t N = boost::mp11::mp_size<Members>::value;
    static_assert(N <= 64, "a struct's members are tracked in 64 bits");

    static bool object(Handler& h, void* t) {
        h.push(Frame{&frame, t, 0, kUnknown, h.child_flags()});
        return true;
    }
    static bool key(Handler& h, Frame& f, std::string_view k) {
        int found = -1, i = 0;
        boost::mp11::mp_for_each<Members>([&](auto D) {
            if (found < 0 && detail::json_key(D.name) == k) found = i;
            ++i;
        });
        if (found >= 0) {
            auto bit = std::uint64_t(1) << found;
            if (f.seen & bit) return false;  // a repeated key: the DOM keeps one of them
            f.seen |= bit;
            f.member = found;
            return true;
        }
        if ((f.flags & kDropManagedFields) && k == "managedFields") {
            f.member = kSkip;
            return true;
        }
        if constexpr (requires(T& t) { t.unknown; }) {
            h.key.assign(k.data(), k.size());
            f.member = kUnknown;
        } else {
            f.member = kSkip;
        }
        return true;
    }
    static bool unknown_done(Handler& h, void* t, json::value&& v) {
        auto& unknown = *static_cast<json::object*>(t);
        if (unknown.empty() && unknown.storage() != h.arena()) {
            std::destroy_at(&unknown);
            std::construct_at(&unknown, h.arena());
        }
        // emplace keeps an existing key; a repeated key goes through the DOM instead.
        return unknown.emplace(h.key, std::move(v)).second;
    }
    static constexpr SinkOps unknown_sink{nullptr, nullptr, nullptr, nullptr, &unknown_done, true};

    static bool child(Handler& h, Frame& f, bool is_null, Sink& out, bool& skip) {
        if (f.member == kSkip) {
            skip = true;
            return true;
        }
        auto& t = *static_cast<T*>(f.target);
        if (f.member == kUnknown) {
            if constexpr (requires { t.unknown; }) {
                if ((f.flags & kRootObject) && h.drop_managed_fields() && h.key == "metadata") return false;  // via the DOM
                out = Sink{&unknown_sink, &t.unknown};
                return true;
            }
            return false;
        }
        if (is_null) {
            skip = true;
            return true;
        }
        int i = 0;
        boost::mp11::mp_for_each<Members>([&](auto D) {
            if (i++ != f.member) return;
            using M = std::remove_cvref_t<decltype(t.*D.pointer)>;
            out = Sink{sink_ops<M>(), &(t.*D.pointer)};
            if ((f.flags & kRootObject) && h.drop_managed_fields() && detail::json_key(D.name) == "metadata")
                h.set_child_flags(kDropManagedFields);
        });
        return true;
    }
    static constexpr FrameOps frame{&key, &child};
};

template <class T>
struct is_vector_bool : std::false_type {};
template <class A>
struct is_vector_bool<std::vector<bool, A>> : std::true_type {};

enum class Kind { Capture, Optional, String, Scalar, Map, Vector, Struct };

/// The same order of cases as detail::read_value.
template <class T>
constexpr Kind kind_of() {
    if constexpr (detail::is_optional<T>::value) return Kind::Optional;
    else if constexpr (std::is_same_v<T, json::value> || std::is_same_v<T, json::object>) return Kind::Capture;
    else if constexpr (std::is_same_v<T, std::string>) return Kind::String;
    else if constexpr (std::is_same_v<T, bool> || std::is_integral_v<T> || std::is_floating_point_v<T>) return Kind::Scalar;
    else if constexpr (requires { typename T::mapped_type; }) return Kind::Map;
    else if constexpr (requires(T& out) { out.push_back(std::declval<typename T::value_type>()); } && !is_vector_bool<T>::value)
        return Kind::Vector;
    else if constexpr (Described<T>) return Kind::Struct;
    else return Kind::Capture;
}

/// An optional is captured when what it holds is; otherwise it takes the tokens that start
/// what it holds.
template <class T>
constexpr bool captured() {
    if constexpr (kind_of<T>() == Kind::Optional) return captured<typename T::value_type>();
    else return kind_of<T>() == Kind::Capture;
}

template <class T>
constexpr SinkOps make_sink_ops() {
    SinkOps o;
    constexpr Kind k = kind_of<T>();
    if constexpr (captured<T>()) {
        o.done = &capture_done<T>;
        o.keeps_dom = std::is_same_v<T, json::value> || std::is_same_v<T, json::object>;
    } else if constexpr (k == Kind::Optional) {
        constexpr Kind x = kind_of<typename T::value_type>();
        if constexpr (x == Kind::Struct || x == Kind::Map || x == Kind::Optional) o.object = &OptionalOps<T>::object;
        if constexpr (x == Kind::Vector || x == Kind::Optional) o.array = &OptionalOps<T>::array;
        if constexpr (x == Kind::Scalar || x == Kind::Optional) o.scalar = &OptionalOps<T>::scalar;
        if constexpr (x == Kind::String || x == Kind::Optional) o.string = &OptionalOps<T>::string;
    } else if constexpr (k == Kind::String) {
        o.string = &StringOps<T>::string;
    } else if constexpr (k == Kind::Scalar) {
        o.scalar = &ScalarOps<T>::scalar;
    } else if constexpr (k == Kind::Map) {
        o.object = &MapOps<T>::object;
    } else if constexpr (k == Kind::Vector) {
        o.array = &VectorOps<T>::array;
    } else {
        o.object = &StructOps<T>::object;
    }
    return o;
}

template <class T>
inline constexpr SinkOps sink_ops_v = make_sink_ops<T>();

template <class T>
const SinkOps* sink_ops() {
    return &sink_ops_v<T>;
}

} // namespace sax

/// The fast path alone: decodes JSON text into `out` (a default-constructed T) and returns
/// true when the result is exactly from_json's; false for anything it leaves to the DOM
/// (invalid JSON included), with `out` then partly written.
template <class T>
bool try_decode_json(std::string_view text, T& out) {
    boost::json::basic_parser<sax::Handler> p(boost::json::parse_options{});
    p.handler().start(sax::Sink{sax::sink_ops<T>(), &out}, false);
    boost::system::error_code ec;
    auto n = p.write_some(false, text.data(), text.size(), ec);
    return !ec && n == text.size() && !p.handler().failed();
}

/// Decodes JSON text as T with from_json's result, without building a DOM for what T models.
/// Raises DecodeError exactly as from_json(parse(text)) does (invalid JSON included).
template <class T>
T decode_json(std::string_view text) {
    T out{};
    if (try_decode_json(text, out)) return out;
    return from_json<T>(parse(text));
}

} // namespace vck::api
