// ImageBehaviour: what the sandbox's simulated kubelet does for a container image, since it
// pulls and runs no real images: succeed or fail after a delay (with log lines, an exit code
// and a termination message), run until the pod is deleted, or execute a host program with the
// container's command and arguments as its argv (never through a shell), or execute what the
// container's command names inside a directory that stands for the image's filesystem (an
// absolute command under it, a bare name on the image's PATH there). Images are matched
// by exact name first, then by glob pattern ("vck/vck-fetch:*"), see ImageBehaviours::find.
// An image also has a default user (its Dockerfile's USER), root unless said otherwise: the
// kubelet runs a container as that user when no securityContext names one.
#pragma once

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <fnmatch.h>
#include <map>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <unistd.h>
#include <vector>

namespace vck::sandbox {

/// An image's default user, numeric as the kubelet needs it to verify runAsNonRoot. The
/// image's /etc/passwd is taken to hold one entry, this user with this group: a
/// securityContext that names another uid and no group gets group 0, as containerd gives a uid
/// it cannot find in the image's /etc/passwd.
struct ImageUser {
    std::uint32_t uid = 0;
    std::uint32_t gid = 0;
    bool operator==(const ImageUser&) const = default;
};

struct ImageBehaviour {
    enum class Kind { Succeed, Fail, RunForever, Execute };
    Kind kind = Kind::Succeed;
    std::chrono::milliseconds delay{100};   // Succeed/Fail: how long the container runs
    std::vector<std::string> log_lines;     // written to the container's log when it starts
    int exit_code = 0;                      // Fail: the exit code (non-zero)
    std::string message;                    // Succeed/Fail: the terminated state's message
    std::filesystem::path program;          // Execute: replaces command[0] (or is the entrypoint)
    std::map<std::string, std::filesystem::path> commands;  // Execute: command[0] -> program, before `program`
    std::filesystem::path root;              // Execute: the image's filesystem, where command[0] is found
    ImageUser user;                         // the image's USER: root, as for an image that names none

    static ImageBehaviour succeed(std::chrono::milliseconds delay = std::chrono::milliseconds(100),
                                  std::vector<std::string> lines = {}) {
        ImageBehaviour b;
        b.delay = delay;
        b.log_lines = std::move(lines);
        return b;
    }
    static ImageBehaviour fail(int exit_code = 1, std::chrono::milliseconds delay = std::chrono::milliseconds(100),
                               std::vector<std::string> lines = {}, std::string message = {}) {
        if (exit_code == 0) throw std::invalid_argument("a failing image needs a non-zero exit code");
        ImageBehaviour b;
        b.kind = Kind::Fail;
        b.exit_code = exit_code;
        b.delay = delay;
        b.log_lines = std::move(lines);
        b.message = std::move(message);
        return b;
    }
    static ImageBehaviour run_forever(std::vector<std::string> lines = {}) {
        ImageBehaviour b;
        b.kind = Kind::RunForever;
        b.log_lines = std::move(lines);
        return b;
    }
    static ImageBehaviour execute(std::filesystem::path program) {
        ImageBehaviour b;
        b.kind = Kind::Execute;
        b.program = std::move(program);
        return b;
    }

    /// An image whose filesystem is the directory `dir`: see program_for().
    static ImageBehaviour image_root(std::filesystem::path dir) {
        ImageBehaviour b;
        b.kind = Kind::Execute;
        b.root = std::move(dir);
        return b;
    }

    /// The PATH an image's containers start with (the kubelet's default for containers).
    static constexpr std::string_view default_path = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";

    /// The host program that runs for a container whose command starts with `command0`: from
    /// `commands`, else `program`, else (an image root) root/command0 when it is absolute, or
    /// the first executable root/DIR/command0 for DIR on default_path. Nothing when none is.
    std::optional<std::filesystem::path> program_for(const std::string& command0) const {
        if (auto it = commands.find(command0); it != commands.end()) return it->second;
        if (!program.empty()) return program;
        if (root.empty() || command0.empty()) return std::nullopt;
        auto executable = [](const std::filesystem::path& p) {
            std::error_code ec;
            return std::filesystem::is_regular_file(p, ec) && ::access(p.c_str(), X_OK) == 0;
        };
        if (command0.front() == '/') {
            auto p = root / command0.substr(1);
            return executable(p) ? std::optional(p) : std::nullopt;
        }
        if (command0.find('/') != std::string::npos) return std::nullopt;  // relative paths: no working directory in an image
        std::string_view dirs = default_path;
        while (!dirs.empty()) {
            auto colon = dirs.find(':');
            auto dir = dirs.substr(0, colon);
            auto p = root / std::string(dir.substr(1)) / command0;
            if (executable(p)) return p;
            dirs = colon == std::string_view::npos ? std::string_view{} : dirs.substr(colon + 1);
        }
        return std::nullopt;
    }

    /// Why no program runs for `command0`, in containerd's words.
    std::string missing_program(const std::string& command0, const std::string& image) const {
        if (root.empty()) return "exec: \"" + command0 + "\": no host program is mapped for image " + image;
        if (!command0.empty() && command0.front() == '/')
            return "exec: \"" + command0 + "\": stat " + command0 + ": no such file or directory";
        return "exec: \"" + command0 + "\": executable file not found in $PATH";
    }

    /// Reads the text form of vck-sandbox's --image IMAGE=BEHAVIOUR: "succeed[:DELAY]",
    /// "fail[:EXIT[:DELAY]]", "forever", "exec:PATH", "root:DIR", each optionally followed by
    /// ";user=UID[:GID]" (the image's default user; GID 0 when not given, as Docker gives a
    /// numeric USER without an /etc/passwd entry). DELAY is "250ms", "2s" or "1m".
    /// Throws std::invalid_argument with the accepted forms.
    static ImageBehaviour parse(std::string_view text) {
        auto bad = [&](const std::string& why) {
            return std::invalid_argument("invalid image behaviour \"" + std::string(text) + "\": " + why +
                                         " (expected succeed[:DELAY], fail[:EXIT[:DELAY]], forever, exec:PATH or root:DIR, "
                                         "then optionally ;user=UID[:GID])");
        };
        auto semi = text.find(';');
        auto b = parse_kind(text.substr(0, semi), bad);
        while (semi != std::string_view::npos) {
            auto rest = text.substr(semi + 1);
            semi = rest.find(';');
            auto option = rest.substr(0, semi);
            if (!option.starts_with("user=")) throw bad("unknown option \"" + std::string(option) + "\"");
            auto ids = option.substr(5);
            auto colon = ids.find(':');
            b.user.uid = parse_id(ids.substr(0, colon), bad);
            b.user.gid = colon == std::string_view::npos ? 0 : parse_id(ids.substr(colon + 1), bad);
        }
        return b;
    }

private:
    template <class Bad>
    static ImageBehaviour parse_kind(std::string_view text, Bad&& bad) {
        auto head = text.substr(0, text.find(':'));
        std::string_view rest = head.size() < text.size() ? text.substr(head.size() + 1) : std::string_view{};
        if (head == "exec") {
            if (rest.empty()) throw bad("exec needs a program path");
            return execute(std::filesystem::path(std::string(rest)));
        }
        if (head == "root") {
            if (rest.empty()) throw bad("root needs the directory that holds the image's files");
            return image_root(std::filesystem::path(std::string(rest)));
        }
        if (head == "forever") {
            if (!rest.empty()) throw bad("forever takes no arguments");
            return run_forever();
        }
        if (head == "succeed") return succeed(rest.empty() ? std::chrono::milliseconds(100) : parse_delay(rest, bad));
        if (head == "fail") {
            int code = 1;
            auto delay = std::chrono::milliseconds(100);
            if (!rest.empty()) {
                auto code_text = std::string(rest.substr(0, rest.find(':')));
                try {
                    std::size_t used = 0;
                    code = std::stoi(code_text, &used);
                    if (used != code_text.size()) throw std::invalid_argument(code_text);
                } catch (const std::exception&) {
                    throw bad("the exit code \"" + code_text + "\" is not a number");
                }
                if (code <= 0 || code > 255) throw bad("the exit code must be 1..255");
                if (code_text.size() < rest.size()) delay = parse_delay(rest.substr(code_text.size() + 1), bad);
            }
            return fail(code, delay);
        }
        throw bad("unknown behaviour \"" + std::string(head) + "\"");
    }

    /// A uid or gid: decimal, below 2^32 - 1 (which means "no change" to the kernel).
    template <class Bad>
    static std::uint32_t parse_id(std::string_view s, Bad&& bad) {
        if (s.empty() || s.size() > 10 || s.find_first_not_of("0123456789") != std::string_view::npos)
            throw bad("the user \"" + std::string(s) + "\" is not a numeric id");
        auto n = std::stoull(std::string(s));
        if (n >= 0xffffffffull) throw bad("the user \"" + std::string(s) + "\" is out of range");
        return static_cast<std::uint32_t>(n);
    }

    template <class Bad>
    static std::chrono::milliseconds parse_delay(std::string_view s, Bad&& bad) {
        std::size_t digits = 0;
        while (digits < s.size() && s[digits] >= '0' && s[digits] <= '9') ++digits;
        auto unit = s.substr(digits);
        if (digits == 0 || digits > 9) throw bad("the delay \"" + std::string(s) + "\" is not a duration");
        long n = std::stol(std::string(s.substr(0, digits)));
        if (unit == "ms") return std::chrono::milliseconds(n);
        if (unit == "s") return std::chrono::seconds(n);
        if (unit == "m") return std::chrono::minutes(n);
        throw bad("the delay \"" + std::string(s) + "\" needs a unit ms, s or m");
    }
};

/// Behaviours by image: exact names win over glob patterns; unmatched images get `fallback`.
struct ImageBehaviours {
    std::map<std::string, ImageBehaviour> images;
    ImageBehaviour fallback = ImageBehaviour::succeed();

    const ImageBehaviour& find(const std::string& image) const {
        if (auto it = images.find(image); it != images.end()) return it->second;
        for (const auto& [pattern, b] : images)
            if (fnmatch(pattern.c_str(), image.c_str(), 0) == 0) return b;
        return fallback;
    }
};

} // namespace vck::sandbox
