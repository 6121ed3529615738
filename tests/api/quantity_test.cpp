// Quantity: quantity_value accepts exactly resource.Quantity's grammar (sign, digits with an
// optional leading or trailing decimal point, then a binary suffix, a decimal suffix or an
// e/E exponent) and gives its value; everything else is nullopt.
#include <vck/api/quantity.hpp>

#include <doctest.h>

#include <string>

using vck::api::quantity_value;

TEST_CASE("every spelling resource.Quantity accepts has its value") {
    struct Case {
        const char* text;
        double value;
    };
    const Case valid[] = {
        {"0", 0},           {"10", 10},          {"+10", 10},          {"-10", -10},
        {"1.5", 1.5},       {".5", 0.5},         {"5.", 5},            {"+.5", 0.5},
        {"-.5", -0.5},      {"007", 7},          {"500m", 0.5},        {"1n", 1e-9},
        {"2u", 2e-6},       {"1k", 1e3},         {"1M", 1e6},          {"5G", 5e9},
        {"1T", 1e12},       {"1P", 1e15},        {"1E", 1e18},         {"1Ki", 1024},
        {"1Mi", 1048576},   {"5Gi", 5368709120}, {".5Gi", 536870912},  {"1.5Gi", 1610612736},
        {"5.Gi", 5368709120}, {"1Ti", 0x1p40},   {"1Pi", 0x1p50},      {"1Ei", 0x1p60},
        {"1e3", 1000},      {"1E3", 1000},       {"1e+3", 1000},       {"1e-3", 0.001},
        {"2.5e2", 250},     {".5e1", 5},         {"-1Gi", -1073741824}, {"1e-400", 0},
        {"0.0", 0},         {"0e999", 0},
    };
    for (const auto& c : valid) {
        CAPTURE(c.text);
        auto v = quantity_value(c.text);
        REQUIRE(v);
        CHECK(*v == doctest::Approx(c.value).epsilon(1e-12));
    }
}

TEST_CASE("anything outside resource.Quantity's grammar, or beyond a double, is nullopt") {
    for (std::string bad : {"", "+", "-", ".", "+.", "Gi", "e3", "1.2.3", "1..5", "1 Gi", " 1", "1Gi ", "1gi",
                            "1K", "1mi", "1Ki5", "1GiB", "1e", "1E+", "1e+-3", "1e3.5", "1e3Gi", "1ee3",
                            "++1", "+-1", "0x10", "inf", "nan", "1,5", "1e400", "1e99999999999999999999",
                            "5iG"}) {
        CAPTURE(bad);
        CHECK_FALSE(quantity_value(bad));
    }
}
