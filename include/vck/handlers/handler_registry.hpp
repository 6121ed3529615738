// HandlerRegistry: the DataHandlers a controller serves, by sourceType. Handlers are stored
// type-erased, so user code adds its own (any type satisfying DataHandler) without touching
// library files. Guarantees: lookups of unknown types yield a message listing every known
// type; a deprecated alias resolves to its target and carries a warning for a Warning event.
#pragma once

#include <vck/handlers/data_handler.hpp>
#include <vck/handlers/local_handler.hpp>
#include <vck/handlers/nfs_handler.hpp>
#include <vck/handlers/pachyderm_handler.hpp>
#include <vck/handlers/s3_handler.hpp>
#include <vck/handlers/s3_output_handler.hpp>

#include <concepts>
#include <map>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

namespace vck::handlers {

/// Any DataHandler behind one interface.
class AnyHandler {
public:
    template <DataHandler H>
    explicit AnyHandler(H h) : self_(std::make_shared<Model<H>>(std::move(h))) {}

    std::optional<std::string> validate(const api::VolumeConfig& vc) const { return self_->validate(vc); }
    std::optional<std::string> validate(const HandlerContext& c, const api::VolumeManager& vm,
                                        const api::VolumeConfig& vc) const { return self_->validate(c, vm, vc); }
    /// Every reason validate(c, vm, vc) has: the handler's problems(c, vm, vc) when it lists
    /// them, else its one validate(c, vm, vc) failure (a user handler need not list them).
    std::vector<VolumeProblem> problems(const HandlerContext& c, const api::VolumeManager& vm,
                                        const api::VolumeConfig& vc) const { return self_->problems(c, vm, vc); }
    DesiredObjects desired(const HandlerContext& c, const api::VolumeManager& vm, const api::VolumeConfig& vc) const {
        return self_->desired(c, vm, vc);
    }
    VolumeOutcome status(const HandlerContext& c, const api::VolumeManager& vm, const api::VolumeConfig& vc,
                         const ObservedObjects& o) const { return self_->status(c, vm, vc, o); }
    CleanupPlan cleanup_objects(const HandlerContext& c, const api::VolumeManager& vm, const api::VolumeConfig& vc,
                                const ObservedObjects& o) const { return self_->cleanup_objects(c, vm, vc, o); }
    /// Whether the handler is a CopyingHandler (its volumes are copies the reconciler places).
    bool copies() const { return self_->copies(); }
    std::optional<CopyLayout> copy_layout(const HandlerContext& c, const api::VolumeConfig& vc) const {
        return self_->copy_layout(c, vc);
    }
    api::Pod copy_pod(const HandlerContext& c, const api::VolumeManager& vm, const api::VolumeConfig& vc,
                      const CopyTarget& t) const { return self_->copy_pod(c, vm, vc, t); }
    /// Whether the handler is an OutputHandler (its copies are uploaded before they go).
    bool uploads() const { return self_->uploads(); }
    api::Pod upload_pod(const HandlerContext& c, const api::VolumeManager& vm, const api::VolumeConfig& vc,
                        const CopyTarget& t) const { return self_->upload_pod(c, vm, vc, t); }

private:
    struct Concept {
        virtual ~Concept() = default;
        virtual std::optional<std::string> validate(const api::VolumeConfig&) const = 0;
        virtual std::optional<std::string> validate(const HandlerContext&, const api::VolumeManager&,
                                                    const api::VolumeConfig&) const = 0;
        virtual std::vector<VolumeProblem> problems(const HandlerContext&, const api::VolumeManager&,
                                                    const api::VolumeConfig&) const = 0;
        virtual DesiredObjects desired(const HandlerContext&, const api::VolumeManager&, const api::VolumeConfig&) const = 0;
        virtual VolumeOutcome status(const HandlerContext&, const api::VolumeManager&, const api::VolumeConfig&,
                                     const ObservedObjects&) const = 0;
        virtual CleanupPlan cleanup_objects(const HandlerContext&, const api::VolumeManager&, const api::VolumeConfig&,
                                            const ObservedObjects&) const = 0;
        virtual bool copies() const = 0;
        virtual std::optional<CopyLayout> copy_layout(const HandlerContext&, const api::VolumeConfig&) const = 0;
        virtual api::Pod copy_pod(const HandlerContext&, const api::VolumeManager&, const api::VolumeConfig&,
                                  const CopyTarget&) const = 0;
        virtual bool uploads() const = 0;
        virtual api::Pod upload_pod(const HandlerContext&, const api::VolumeManager&, const api::VolumeConfig&,
                                    const CopyTarget&) const = 0;
    };
    template <class H>
    struct Model final : Concept {
        explicit Model(H h) : h(std::move(h)) {}
        std::optional<std::string> validate(const api::VolumeConfig& vc) const override { return h.validate(vc); }
        std::optional<std::string> validate(const HandlerContext& c, const api::VolumeManager& vm,
                                            const api::VolumeConfig& vc) const override { return h.validate(c, vm, vc); }
        std::vector<VolumeProblem> problems(const HandlerContext& c, const api::VolumeManager& vm,
                                            const api::VolumeConfig& vc) const override {
            if constexpr (requires { { h.problems(c, vm, vc) } -> std::same_as<std::vector<VolumeProblem>>; })
                return h.problems(c, vm, vc);
            else if (auto e = h.validate(c, vm, vc))
                return {VolumeProblem{"", *e}};
            else
                return {};
        }
        DesiredObjects desired(const HandlerContext& c, const api::VolumeManager& vm,
                               const api::VolumeConfig& vc) const override { return h.desired(c, vm, vc); }
        VolumeOutcome status(const HandlerContext& c, const api::VolumeManager& vm, const api::VolumeConfig& vc,
                             const ObservedObjects& o) const override { return h.status(c, vm, vc, o); }
        CleanupPlan cleanup_objects(const HandlerContext& c, const api::VolumeManager& vm, const api::VolumeConfig& vc,
                                    const ObservedObjects& o) const override { return h.cleanup_objects(c, vm, vc, o); }
        bool copies() const override { return CopyingHandler<H>; }
        std::optional<CopyLayout> copy_layout(const HandlerContext& c, const api::VolumeConfig& vc) const override {
            if constexpr (CopyingHandler<H>) return h.copy_layout(c, vc);
            else return std::nullopt;
        }
        api::Pod copy_pod(const HandlerContext& c, const api::VolumeManager& vm, const api::VolumeConfig& vc,
                          const CopyTarget& t) const override {
            if constexpr (CopyingHandler<H>) return h.copy_pod(c, vm, vc, t);
            else throw std::logic_error("copy_pod called on a handler that does not copy data onto nodes");
        }
        bool uploads() const override { return OutputHandler<H>; }
        api::Pod upload_pod(const HandlerContext& c, const api::VolumeManager& vm, const api::VolumeConfig& vc,
                            const CopyTarget& t) const override {
            if constexpr (OutputHandler<H>) return h.upload_pod(c, vm, vc, t);
            else throw std::logic_error("upload_pod called on a handler whose volumes are not output");
        }
        H h;
    };
    std::shared_ptr<const Concept> self_;
};

/// The result of looking a sourceType up: a handler, or `error` saying which types exist.
struct HandlerLookup {
    const AnyHandler* handler = nullptr;
    std::string warning;  // non-empty for deprecated aliases
    std::string error;
};

class HandlerRegistry {
public:
    /// The built-in types: S3, S3-Dev (deprecated alias of S3), S3-Output (an output volume),
    /// NFS, Pachyderm, Local.
    static HandlerRegistry with_builtin_handlers() {
        HandlerRegistry r;
        r.add("S3", S3Handler{});
        r.add("S3-Output", S3OutputHandler{});
        r.add("NFS", NfsHandler{});
        r.add("Pachyderm", PachydermHandler{});
        r.add("Local", LocalHandler{});
        r.add_alias("S3-Dev", "S3", "sourceType S3-Dev is deprecated, use S3");
        return r;
    }

    /// Registers (or replaces) the handler of `source_type`.
    template <DataHandler H>
    void add(std::string source_type, H handler) {
        if (source_type.empty()) throw std::invalid_argument("a handler needs a non-empty sourceType");
        entries_.insert_or_assign(std::move(source_type), Entry{AnyHandler(std::move(handler)), "", ""});
    }

    /// Makes `alias` resolve to `target`'s handler, with a deprecation warning.
    void add_alias(std::string alias, const std::string& target, std::string warning) {
        auto it = entries_.find(target);
        if (it == entries_.end()) throw std::invalid_argument("alias target sourceType \"" + target + "\" is not registered");
        entries_.insert_or_assign(std::move(alias), Entry{it->second.handler, target, std::move(warning)});
    }

    HandlerLookup find(const std::string& source_type) const {
        auto it = entries_.find(source_type);
        if (it == entries_.end()) return {nullptr, "", unknown_type_message(source_type)};
        return {&it->second.handler, it->second.warning, ""};
    }

    /// Every registered sourceType, sorted.
    std::vector<std::string> known_types() const {
        std::vector<std::string> out;
        for (const auto& [name, e] : entries_) out.push_back(name);
        return out;
    }

    std::string unknown_type_message(const std::string& source_type) const {
        std::string known;
        for (const auto& t : known_types()) known += (known.empty() ? "" : ", ") + t;
        return "unknown sourceType \"" + source_type + "\": known types are " + known;
    }

private:
    struct Entry {
        AnyHandler handler;
        std::string alias_of;
        std::string warning;
    };
    std::map<std::string, Entry> entries_;
};

} // namespace vck::handlers
