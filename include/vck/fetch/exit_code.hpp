// ExitCode: vck-fetch's process exit status, one per class of failure, so the controller
// (and a user reading `kubectl describe pod`) can tell a typo from an outage.
// Guarantee: exit_code_for() maps every exception vck-fetch can throw to exactly one code.
#pragma once

#include <vck/fetch/confinement.hpp>
#include <vck/fetch/local_error.hpp>
#include <vck/s3/s3_error.hpp>

#include <exception>
#include <stdexcept>
#include <string_view>

namespace vck::fetch {

enum class ExitCode : int {
    Ok = 0,
    Failed = 1,          // anything not below (partial failure of some objects)
    BadArguments = 2,    // flags, URLs, globs
    Authentication = 3,  // credentials rejected or access denied
    NotFound = 4,        // bucket or key does not exist
    Network = 5,         // endpoint unreachable, connection cut, server errors after retries
    LocalDisk = 6,       // cannot write/rename/read local files
    Refused = 7,         // delete or prepare refused: path outside the allowed roots
};

constexpr std::string_view to_string(ExitCode c) {
    switch (c) {
    case ExitCode::Ok: return "ok";
    case ExitCode::Failed: return "failed";
    case ExitCode::BadArguments: return "bad arguments";
    case ExitCode::Authentication: return "authentication";
    case ExitCode::NotFound: return "not found";
    case ExitCode::Network: return "network";
    case ExitCode::LocalDisk: return "local disk";
    case ExitCode::Refused: return "refused";
    }
    return "unknown";
}

inline ExitCode exit_code_for(s3::S3ErrorKind k) {
    switch (k) {
    case s3::S3ErrorKind::NoSuchBucket:
    case s3::S3ErrorKind::NoSuchKey: return ExitCode::NotFound;
    case s3::S3ErrorKind::AccessDenied:
    case s3::S3ErrorKind::BadCredentials: return ExitCode::Authentication;
    case s3::S3ErrorKind::SlowDown:
    case s3::S3ErrorKind::ServerError:
    case s3::S3ErrorKind::Network:
    case s3::S3ErrorKind::InvalidResponse: return ExitCode::Network;
    case s3::S3ErrorKind::InvalidRange:
    case s3::S3ErrorKind::BadRequest: return ExitCode::Failed;
    }
    return ExitCode::Failed;
}

/// Call inside a catch block.
inline ExitCode exit_code_for(const std::exception_ptr& e) {
    try {
        std::rethrow_exception(e);
    } catch (const s3::S3Error& x) {
        return exit_code_for(x.kind());
    } catch (const PathRefused&) {
        return ExitCode::Refused;
    } catch (const LocalError&) {
        return ExitCode::LocalDisk;
    } catch (const std::filesystem::filesystem_error&) {
        return ExitCode::LocalDisk;
    } catch (const std::invalid_argument&) {
        return ExitCode::BadArguments;
    } catch (...) {
        return ExitCode::Failed;
    }
}

} // namespace vck::fetch
