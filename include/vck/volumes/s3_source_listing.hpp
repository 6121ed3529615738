// The listing a refresh compares (volumes/source_refresh.hpp) for S3 volumes: the source
// listed as vck-fetch lists it, with the volume's awsCredentialsSecretName (read live: the
// controller's Secret cache keeps no values) at its endpointURL, reduced to its digest
// (s3/listing_digest.hpp).
// Needs the vck-s3 part (pugixml), unlike the rest of volumes/: vck-controller links it and
// passes list_s3_source as ReconcilerOptions::list_source.
// Guarantee: every failure (no Secret, refused credentials, an unreachable endpoint, no such
// bucket) comes back as SourceListing::error, one line, never as an exception.
#pragma once

#include <vck/client/base64.hpp>
#include <vck/client/client.hpp>
#include <vck/s3/listing_digest.hpp>
#include <vck/s3/s3_client.hpp>
#include <vck/s3/s3_url.hpp>
#include <vck/volumes/source_refresh.hpp>

#include <boost/asio/awaitable.hpp>
#include <boost/asio/this_coro.hpp>

#include <string>
#include <vector>

namespace vck::volumes {

/// The listing of an S3 volume's source with its awsCredentialsSecretName (read with `c`) at
/// its endpointURL, as vck-fetch lists it.
inline boost::asio::awaitable<SourceListing> list_s3_source(client::Client& c, const api::VolumeManager& vm,
                                                           const api::VolumeConfig& vc) {
    SourceListing out;
    const std::string secret_name = vc.option("awsCredentialsSecretName");
    try {
        client::GetOptions options;  // named: no temporaries in a co_await expression (GCC 12)
        auto secret = co_await c.get<api::Secret>(vm.metadata.namespace_, secret_name, options);
        auto value = [&](const std::string& key) -> std::string {
            if (auto it = secret.data.find(key); it != secret.data.end()) return client::base64_decode(it->second).value_or("");
            return {};
        };
        s3::S3Config cfg;
        cfg.endpoint = vc.has_option("endpointURL") ? vc.option("endpointURL") : std::string();
        cfg.credentials = s3::Credentials{value("awsAccessKeyID"), value("awsSecretAccessKey"), ""};
        cfg.max_attempts = 3;
        auto url = s3::S3Url::parse(vc.option("sourceURL"));
        auto ex = co_await boost::asio::this_coro::executor;
        s3::S3Client s3(ex, cfg);
        std::vector<s3::ObjectInfo> objects;
        if (url.recursive()) objects = co_await s3.list_all(url.bucket, url.key);
        else objects.push_back(co_await s3.head_object(url.bucket, url.key));
        out.digest = s3::listing_digest(objects, url.recursive() ? url.key : "", !url.recursive());
    } catch (const client::ApiError& e) {
        std::string what = e.what();
        out.error = "cannot read Secret \"" + secret_name + "\": " + what.substr(0, what.find('\n'));
    } catch (const std::exception& e) {
        std::string what = e.what();
        out.error = what.substr(0, what.find('\n'));
    }
    co_return out;
}

} // namespace vck::volumes
