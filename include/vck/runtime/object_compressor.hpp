// ObjectCompressor: the compact form a Store keeps its objects in when asked to
// (StoreOptions::compressed, InformerOptions::store): each object's compact JSON,
// zstd-compressed against a dictionary of objects seen before. Objects of one resource share
// nearly all their keys and many values, so a 1 KB VolumeManager or claim shrinks to 100-160
// bytes. Guarantees: decompress(compress(o)) serializes exactly as o does (every field,
// `unknown` included); key and resourceVersion are read without decompressing; a dictionary
// never changes or goes once made, so every blob stays readable. Any number of threads may
// decompress at once; compress() calls must not overlap (the store's write lock orders them).
#pragma once

#include <vck/api/json.hpp>
#include <vck/api/json_decoder.hpp>
#include <vck/runtime/kube_object.hpp>

// The advanced dictionary API (experimental in zstd's terms, exported by the shared library
// all the same): the default one sizes match tables for large inputs, 220 KB per dictionary.
#define ZSTD_STATIC_LINKING_ONLY
#include <zstd.h>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <deque>
#include <algorithm>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>

namespace vck::runtime {

/// Types a compressor can hold: untyped JSON, described structs (api::to_json/from_json
/// convert them), or structs Boost.JSON converts both ways (tag_invoke overloads of their own).
template <class T>
concept Compressible = std::same_as<T, boost::json::value> ||
                       (TypedObject<T> && (api::Described<T> || (boost::json::has_value_from<T>::value &&
                                                                  boost::json::has_value_to<T>::value)));

/// One compressed object: a single allocation holding namespace, name and resourceVersion in
/// the clear (the store keys and compares by them), which dictionary it used, and the zstd
/// frame of its JSON.
class CompressedObject {
public:
    CompressedObject() = default;
    CompressedObject(std::string_view ns, std::string_view name, std::string_view rv, std::uint32_t json_size,
                     std::uint8_t dictionary, std::string_view frame) {
        Header h{size32(ns), size32(name), size32(rv), json_size, size32(frame), dictionary};
        data_.reset(new char[header_size + ns.size() + name.size() + rv.size() + frame.size()]);
        char* p = data_.get();
        std::memcpy(p, &h, header_size);
        p += header_size;
        for (auto part : {ns, name, rv, frame}) {
            if (!part.empty()) std::memcpy(p, part.data(), part.size());
            p += part.size();
        }
    }

    std::string_view namespace_() const { return {text(), header().ns}; }
    std::string_view name() const { return {text() + header().ns, header().name}; }
    std::string_view resource_version() const { return {text() + header().ns + header().name, header().rv}; }
    std::string_view frame() const {
        const Header h = header();
        return {text() + h.ns + h.name + h.rv, h.frame};
    }
    std::uint32_t json_size() const { return header().json; }
    std::uint8_t dictionary() const { return header().dictionary; }
    /// Bytes held, for memory accounting.
    std::size_t size() const {
        const Header h = header();
        return header_size + h.ns + h.name + h.rv + h.frame;
    }

private:
    struct Header {
        std::uint32_t ns, name, rv, json, frame;
        std::uint8_t dictionary;
    };
    static constexpr std::size_t header_size = offsetof(Header, dictionary) + 1;  // no padding kept
    static std::uint32_t size32(std::string_view s) {
        if (s.size() > UINT32_MAX) throw std::length_error("compressed object: a field over 4 GiB");
        return static_cast<std::uint32_t>(s.size());
    }
    Header header() const {
        Header h{};
        std::memcpy(&h, data_.get(), header_size);
        return h;
    }
    const char* text() const { return data_.get() + header_size; }

    std::unique_ptr<char[]> data_;
};

namespace detail {

/// One zstd context of each kind per thread, reused by every compressor (making one costs more
/// than compressing a small object).
template <class Ctx, Ctx* (*make)(), std::size_t (*release)(Ctx*)>
Ctx* zstd_context() {
    thread_local std::unique_ptr<Ctx, std::size_t (*)(Ctx*)> ctx(make(), release);
    if (!ctx) throw std::bad_alloc();
    return ctx.get();
}

} // namespace detail

/// Compresses objects of type T (untyped JSON, or a struct with api::to_json/from_json).
/// Dictionaries: the first object compressed is the first dictionary. Objects change shape as
/// they live (the first VolumeManager had no status yet; later ones have one), so now and then
/// the last few objects compressed become a candidate dictionary, tried on the next few beside
/// the current one; it replaces the current one for new objects only if it saves a fifth. A
/// candidate that does not pays for itself doubles the wait before the next one, and there are
/// at most `max_dictionaries`, so a resource of incompressible objects costs little.
template <class T>
class ObjectCompressor {
public:
    /// zstd's default level: on objects this small, within a few percent of level 19's size
    /// for a fraction of its CPU.
    static constexpr int level = 3;
    static constexpr std::size_t max_dictionaries = 8;
    static constexpr std::size_t sample = 8;                // objects a candidate is made of, and tried on
    static constexpr std::size_t first_wait = 64;           // compressions before the first candidate
    static constexpr std::size_t longest_wait = 64 * 1024;  // after candidates kept failing
    static constexpr std::size_t max_dictionary_bytes = 64 * 1024;

    ObjectCompressor() = default;
    ObjectCompressor(const ObjectCompressor&) = delete;
    ObjectCompressor& operator=(const ObjectCompressor&) = delete;

    CompressedObject compress(const T& obj) {
        std::string json = serialize(obj);
        if (dictionaries_.empty()) add_dictionary(json);
        std::string frame = compress_with(dictionaries_.back(), json);
        if (candidate_) try_candidate(json, frame);
        auto json_size = static_cast<std::uint32_t>(json.size());
        remember(std::move(json));
        auto key = key_view_of(obj);
        return CompressedObject(key.namespace_, key.name, resource_version_view(obj), json_size,
                                static_cast<std::uint8_t>(dictionaries_.size() - 1), frame);
    }

    /// The object `c` was made from, decoded afresh.
    std::shared_ptr<const T> decompress(const CompressedObject& c) const {
        auto* dctx = detail::zstd_context<ZSTD_DCtx, ZSTD_createDCtx, ZSTD_freeDCtx>();
        std::string json(c.json_size(), '\0');
        auto frame = c.frame();
        const Dictionary& d = dictionaries_.at(c.dictionary());
        std::size_t n = ZSTD_decompress_usingDDict(dctx, json.data(), json.size(), frame.data(), frame.size(), d.ddict.get());
        if (ZSTD_isError(n) || n != json.size())
            throw std::runtime_error(std::string("decompressing a cached object: ") + (ZSTD_isError(n) ? ZSTD_getErrorName(n) : "short"));
        if constexpr (std::same_as<T, boost::json::value>) return std::make_shared<const T>(boost::json::parse(json));
        else return std::make_shared<const T>(api::decode_json<T>(json));  // no DOM: half the time of parse + from_json
    }

    std::size_t dictionaries() const { return dictionaries_.size(); }

private:
    struct Dictionary {
        std::unique_ptr<ZSTD_CDict, std::size_t (*)(ZSTD_CDict*)> cdict{nullptr, ZSTD_freeCDict};
        std::unique_ptr<ZSTD_DDict, std::size_t (*)(ZSTD_DDict*)> ddict{nullptr, ZSTD_freeDDict};
    };
    struct Trial {
        Dictionary dictionary;
        std::size_t objects = 0, current_bytes = 0, candidate_bytes = 0;
    };

    static std::string serialize(const T& obj) {
        if constexpr (std::same_as<T, boost::json::value>) {
            return boost::json::serialize(obj);
        } else {
            // The DOM only lives to be serialized: one arena, released in a piece.
            unsigned char buf[8192];
            boost::json::monotonic_resource arena(buf, sizeof buf);
            return boost::json::serialize(api::to_json(obj, boost::json::storage_ptr(&arena)));
        }
    }

    static Dictionary make_dictionary(std::string_view content) {
        // Match tables of 2^12 entries: the same sizes as zstd's defaults on these objects
        // (bench: VolumeManagers, PVs, claims) in a quarter of the memory.
        auto params = ZSTD_getCParams(level, 4096, content.size());
        params.hashLog = std::min(params.hashLog, 12u);
        params.chainLog = std::min(params.chainLog, 12u);
        Dictionary d;  // zstd copies the content into both
        d.cdict.reset(ZSTD_createCDict_advanced(content.data(), content.size(), ZSTD_dlm_byCopy, ZSTD_dct_auto, params,
                                                ZSTD_defaultCMem));
        d.ddict.reset(ZSTD_createDDict(content.data(), content.size()));
        if (!d.cdict || !d.ddict) throw std::bad_alloc();
        return d;
    }
    void add_dictionary(std::string_view content) { dictionaries_.push_back(make_dictionary(content)); }

    /// Compresses `json` with the candidate too; after `sample` objects, keeps it or not.
    void try_candidate(const std::string& json, std::string& frame) {
        std::string other = compress_with(candidate_->dictionary, json);
        candidate_->current_bytes += frame.size();
        candidate_->candidate_bytes += other.size();
        if (++candidate_->objects < sample) return;
        if (candidate_->candidate_bytes * 5 <= candidate_->current_bytes * 4) {
            dictionaries_.push_back(std::move(candidate_->dictionary));
            frame = std::move(other);  // made with what is now the newest dictionary
            wait_ = first_wait;
        } else {
            wait_ = std::min(wait_ * 2, longest_wait);
        }
        candidate_.reset();
        since_candidate_ = 0;
    }

    /// Keeps the last `sample` objects; makes a candidate of them when it is time.
    void remember(std::string json) {
        if (recent_.size() == sample) recent_.pop_front();
        recent_.push_back(std::move(json));
        if (candidate_ || dictionaries_.size() >= max_dictionaries || ++since_candidate_ < wait_) return;
        std::string content;  // the newest objects, up to max_dictionary_bytes
        for (auto it = recent_.rbegin(); it != recent_.rend() && content.size() + it->size() <= max_dictionary_bytes; ++it)
            content.insert(0, *it);
        if (content.empty()) content = recent_.back().substr(0, max_dictionary_bytes);
        candidate_.emplace(Trial{make_dictionary(content)});
    }

    static std::string compress_with(const Dictionary& d, const std::string& json) {
        auto* cctx = detail::zstd_context<ZSTD_CCtx, ZSTD_createCCtx, ZSTD_freeCCtx>();
        std::string frame(ZSTD_compressBound(json.size()), '\0');
        std::size_t n = ZSTD_compress_usingCDict(cctx, frame.data(), frame.size(), json.data(), json.size(), d.cdict.get());
        if (ZSTD_isError(n)) throw std::runtime_error(std::string("compressing a cached object: ") + ZSTD_getErrorName(n));
        frame.resize(n);
        return frame;
    }

    // A deque: a dictionary, once made, never moves while blobs that name it are decoded.
    std::deque<Dictionary> dictionaries_;
    std::deque<std::string> recent_;
    std::optional<Trial> candidate_;
    std::size_t since_candidate_ = 0;
    std::size_t wait_ = first_wait;
};

} // namespace vck::runtime
