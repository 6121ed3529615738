// ImageBehaviour: what the sandbox's simulated kubelet does for a container image, since it
// pulls and runs no real images: succeed or fail after a delay (with log lines, an exit code
// and a termination message), run until the pod is deleted, or execute a host program with the
// container's command and arguments as its argv (never through a shell). Images are matched
// by exact name first, then by glob pattern ("vck/vck-fetch:*"), see ImageBehaviours::find.
#pragma once

#include <chrono>
#include <filesystem>
#include <fnmatch.h>
#include <map>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace vck::testing {

struct ImageBehaviour {
    enum class Kind { Succeed, Fail, RunForever, Execute };
    Kind kind = Kind::Succeed;
    std::chrono::milliseconds delay{100};   // Succeed/Fail: how long the container runs
    std::vector<std::string> log_lines;     // written to the container's log when it starts
    int exit_code = 0;                      // Fail: the exit code (non-zero)
    std::string message;                    // Succeed/Fail: the terminated state's message
    std::filesystem::path program;          // Execute: replaces command[0] (or is the entrypoint)
    std::map<std::string, std::filesystem::path> commands;  // Execute: command[0] -> program, before `program`

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

    /// The host program that runs for a container whose command starts with `command0`.
    std::optional<std::filesystem::path> program_for(const std::string& command0) const {
        if (auto it = commands.find(command0); it != commands.end()) return it->second;
        if (!program.empty()) return program;
        return std::nullopt;
    }

    /// Reads the text form of vck-sandbox's --image IMAGE=BEHAVIOUR: "succeed[:DELAY]",
    /// "fail[:EXIT[:DELAY]]", "forever", "exec:PATH". DELAY is "250ms", "2s" or "1m".
    /// Throws std::invalid_argument with the accepted forms.
    static ImageBehaviour parse(std::string_view text) {
        auto bad = [&](const std::string& why) {
            return std::invalid_argument("invalid image behaviour \"" + std::string(text) + "\": " + why +
                                         " (expected succeed[:DELAY], fail[:EXIT[:DELAY]], forever or exec:PATH)");
        };
        auto head = text.substr(0, text.find(':'));
        std::string_view rest = head.size() < text.size() ? text.substr(head.size() + 1) : std::string_view{};
        if (head == "exec") {
            if (rest.empty()) throw bad("exec needs a program path");
            return execute(std::filesystem::path(std::string(rest)));
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

private:
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

} // namespace vck::testing
