// Specification of api/digest.hpp: SHA-256 and MD5 as lowercase hex, whole or incremental.
#include <vck/api/digest.hpp>

#include <doctest.h>

using namespace vck;

TEST_CASE("sha256_hex and md5_hex give the standard digests as lowercase hex") {
    CHECK(api::sha256_hex("") == "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
    CHECK(api::sha256_hex("abc") == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
    CHECK(api::md5_hex("") == "d41d8cd98f00b204e9800998ecf8427e");
    CHECK(api::md5_hex("abc") == "900150983cd24fb0d6963f7d28e17f72");
}

TEST_CASE("a digest fed in pieces equals the digest of the whole") {
    auto d = api::Digest::sha256();
    d.update("a");
    d.update("");
    d.update("bc");
    CHECK(d.hex() == api::sha256_hex("abc"));
    auto m = api::Digest::md5();
    m.update("ab", 2);
    m.update("c");
    CHECK(m.hex() == api::md5_hex("abc"));
}

TEST_CASE("to_hex writes two lowercase digits per byte, high nibble first") {
    const unsigned char bytes[] = {0x00, 0x0f, 0xa5, 0xff};
    CHECK(api::to_hex(bytes, sizeof bytes) == "000fa5ff");
    CHECK(api::to_hex(bytes, 0).empty());
}
