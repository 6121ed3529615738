// Test support: what a piece of code writes on stderr (vck::log's output), as lines, with the
// log format and verbosity set for it and restored after. stderr is redirected to a file
// meanwhile: anything else writing to it then (another thread) is captured too.
#pragma once

#include <vck/runtime/log.hpp>

#include <doctest.h>

#include <unistd.h>

#include <cstdio>
#include <functional>
#include <sstream>
#include <string>
#include <vector>

namespace vck::test {

/// The lines `write` puts on stderr, with format and verbosity set for it (restored after).
inline std::vector<std::string> stderr_lines(vck::log::Format format, int verbosity, const std::function<void()>& write) {
    std::fflush(stderr);
    FILE* tmp = std::tmpfile();
    REQUIRE(tmp);
    int saved = dup(2);
    dup2(fileno(tmp), 2);
    int old_v = vck::log::verbosity();
    vck::log::set_format(format);
    vck::log::set_verbosity(verbosity);
    write();
    std::fflush(stderr);
    vck::log::set_verbosity(old_v);
    vck::log::set_format(vck::log::Format::Text);
    dup2(saved, 2);
    close(saved);
    std::rewind(tmp);
    std::string all;
    char buf[4096];
    for (std::size_t n; (n = std::fread(buf, 1, sizeof buf, tmp)) > 0;) all.append(buf, n);
    std::fclose(tmp);
    std::vector<std::string> lines;
    std::istringstream in(all);
    for (std::string l; std::getline(in, l);) lines.push_back(l);
    return lines;
}

} // namespace vck::test
