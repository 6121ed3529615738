// RequestParser: reads one HTTP/1.1 request as kube-apiserver's Go server accepts it, into a
// Beast request with a string body. Contract:
// - The request line and header fields together may take up to the parser's header_limit()
//   (Go's MaxHeaderBytes); any single field value within it is accepted. Beast's own fields
//   container holds at most 65,535 bytes per value and throws past that (out of the I/O
//   thread, ending the process): a longer value is kept aside in oversized() instead, and an
//   Authorization value of that size is replaced by one no authenticator accepts (no token
//   the sandbox issues is that long, so the request is treated as carrying an invalid one).
// - A request target longer than 65,535 bytes fails with http::error::header_limit (answered
//   431, as Go answers a request line it will not read).
// - The body goes into the message's string body, up to body_limit(); chunked bodies are
//   joined. Errors are basic_parser's (header_limit, body_limit, bad syntax).
#pragma once

#include <boost/beast/http.hpp>

#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace vck::sandbox {

class RequestParser : public boost::beast::http::basic_parser<true> {
public:
    using message_type = boost::beast::http::request<boost::beast::http::string_body>;

    /// Beast's limit on one field value or the request target (its fields store 16-bit sizes).
    static constexpr std::size_t max_beast_value = std::numeric_limits<std::uint16_t>::max();
    static constexpr std::string_view oversized_authorization = "Bearer invalid-oversized-credential";

    message_type& get() { return msg_; }
    message_type release() { return std::move(msg_); }
    /// Fields whose value Beast cannot hold, in arrival order (name as sent, value).
    const std::vector<std::pair<std::string, std::string>>& oversized() const { return oversized_; }

private:
    using error_code = boost::system::error_code;
    using field = boost::beast::http::field;
    using verb = boost::beast::http::verb;
    using string_view = boost::beast::string_view;  // Beast's own (boost::core), not std's

    void on_request_impl(verb method, string_view method_str, string_view target, int version,
                         error_code& ec) override {
        if (target.size() > max_beast_value || method_str.size() > max_beast_value) {
            ec = boost::beast::http::error::header_limit;
            return;
        }
        if (method == verb::unknown) msg_.method_string(method_str);
        else msg_.method(method);
        msg_.target(target);
        msg_.version(version);
    }
    void on_response_impl(int, string_view, int, error_code&) override {}
    void on_field_impl(field name, string_view name_string, string_view value, error_code&) override {
        if (value.size() <= max_beast_value && name_string.size() <= max_beast_value) {
            msg_.insert(name, name_string, value);
            return;
        }
        oversized_.emplace_back(std::string(name_string), std::string(value));
        if (name == field::authorization) msg_.set(field::authorization, oversized_authorization);
    }
    void on_header_impl(error_code&) override {}
    void on_body_init_impl(const boost::optional<std::uint64_t>& length, error_code&) override {
        if (length) msg_.body().reserve(static_cast<std::size_t>(*length));
    }
    std::size_t on_body_impl(string_view body, error_code&) override {
        msg_.body().append(body);
        return body.size();
    }
    void on_chunk_header_impl(std::uint64_t, string_view, error_code&) override {}
    std::size_t on_chunk_body_impl(std::uint64_t, string_view body, error_code&) override {
        msg_.body().append(body);
        return body.size();
    }
    void on_finish_impl(error_code&) override {}

    message_type msg_;
    std::vector<std::pair<std::string, std::string>> oversized_;
};

} // namespace vck::sandbox
