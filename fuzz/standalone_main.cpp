// The CI smoke run of a libFuzzer target without libFuzzer (CI builds with gcc): linked with one
// target's LLVMFuzzerTestOneInput in the regular sanitizer test build, it runs every file of the
// seed corpus, then a fixed number of mutations of them, drawn from a fixed seed so every run
// tests the same inputs. A broken contract aborts (fuzz_check.hpp), an escaping exception
// terminates, a sanitizer finding halts: any of them makes the test fail.
//   standalone CORPUS_DIR_OR_FILE... [-runs=N] [-max_len=N]
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <memory>
#include <random>
#include <string>
#include <string_view>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size);

namespace {

using Bytes = std::vector<std::uint8_t>;

Bytes slurp(const std::filesystem::path& p) {
    std::ifstream f(p, std::ios::binary);
    return Bytes(std::istreambuf_iterator<char>(f), {});
}

void run(const Bytes& input) {
    // A copy of exactly input.size() bytes, so ASan sees a read past the end.
    auto copy = std::make_unique<std::uint8_t[]>(input.size());
    std::copy(input.begin(), input.end(), copy.get());
    LLVMFuzzerTestOneInput(copy.get(), input.size());
}

// Bytes the parsers give meaning to, so mutations reach past the first syntax check.
constexpr std::string_view kInteresting = "{}[]\":,\n\\ -+.0123456789eEabnmkKiGM=!()~/_\xff\x00";

Bytes mutate(std::mt19937_64& rng, const std::vector<Bytes>& seeds, std::size_t max_len) {
    auto pick = [&](std::size_t n) { return n == 0 ? std::size_t(0) : std::size_t(rng() % n); };
    Bytes b = seeds[pick(seeds.size())];
    for (int m = 1 + int(pick(4)); m > 0; --m) {
        switch (pick(7)) {
        case 0:  // flip a bit
            if (!b.empty()) b[pick(b.size())] ^= std::uint8_t(1u << pick(8));
            break;
        case 1:  // overwrite a byte with one the parsers care about
            if (!b.empty()) b[pick(b.size())] = std::uint8_t(kInteresting[pick(kInteresting.size())]);
            break;
        case 2:  // insert one
            b.insert(b.begin() + std::ptrdiff_t(pick(b.size() + 1)), std::uint8_t(kInteresting[pick(kInteresting.size())]));
            break;
        case 3: {  // erase a range
            if (b.empty()) break;
            auto at = pick(b.size());
            auto n = 1 + pick(std::min<std::size_t>(16, b.size() - at));
            b.erase(b.begin() + std::ptrdiff_t(at), b.begin() + std::ptrdiff_t(at + n));
            break;
        }
        case 4: {  // duplicate a range
            if (b.empty()) break;
            auto at = pick(b.size());
            auto n = 1 + pick(std::min<std::size_t>(32, b.size() - at));
            Bytes part(b.begin() + std::ptrdiff_t(at), b.begin() + std::ptrdiff_t(at + n));
            b.insert(b.begin() + std::ptrdiff_t(pick(b.size() + 1)), part.begin(), part.end());
            break;
        }
        case 5: {  // splice: this input's head, another's tail
            const Bytes& other = seeds[pick(seeds.size())];
            b.resize(pick(b.size() + 1));
            b.insert(b.end(), other.begin() + std::ptrdiff_t(pick(other.size() + 1)), other.end());
            break;
        }
        default:  // truncate
            b.resize(pick(b.size() + 1));
        }
    }
    if (b.size() > max_len) b.resize(max_len);
    return b;
}

} // namespace

int main(int argc, char** argv) {
    std::size_t runs = 20000, max_len = 4096;
    std::vector<std::filesystem::path> files;
    for (int i = 1; i < argc; ++i) {
        std::string_view a = argv[i];
        if (a.starts_with("-runs=")) runs = std::strtoull(argv[i] + 6, nullptr, 10);
        else if (a.starts_with("-max_len=")) max_len = std::strtoull(argv[i] + 9, nullptr, 10);
        else if (std::filesystem::is_directory(a))
            for (const auto& e : std::filesystem::directory_iterator(a)) files.push_back(e.path());
        else files.emplace_back(a);
    }
    std::sort(files.begin(), files.end());
    std::vector<Bytes> seeds;
    for (const auto& f : files) {
        seeds.push_back(slurp(f));
        std::fprintf(stderr, "seed %s\n", f.c_str());
        run(seeds.back());
    }
    if (seeds.empty()) {
        std::fprintf(stderr, "no seed inputs\n");
        return 2;
    }
    std::mt19937_64 rng(20261127);
    for (std::size_t i = 0; i < runs; ++i) run(mutate(rng, seeds, max_len));
    std::printf("%zu seeds and %zu mutations passed\n", seeds.size(), runs);
    return 0;
}
