// PodNetwork: the block of loopback addresses one simulated cluster hands its pods' IPs from,
// 127.<block>.<node>.<n>, a block no other simulated cluster on this host holds at the same
// time (in this process or another), so one sandbox's probes, Service endpoints and pod-to-pod
// traffic never reach another's servers. Blocks are 244 to 255, then 128 to 243; the first
// free one is taken. A block is held by binding an abstract Unix socket named after it
// (Linux): the kernel releases it when the holder closes it or dies, so a crashed sandbox
// leaves nothing behind, and the names are per network namespace, as loopback addresses are.
// Guarantees: pod_ip() never repeats an address while fewer than 250 pods of one node are
// alive at once; construction throws std::runtime_error naming the limit when all 128 blocks
// are held.
#pragma once

#include <cerrno>
#include <cstddef>
#include <cstring>
#include <stdexcept>
#include <string>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

namespace vck::sandbox {

class PodNetwork {
public:
    static constexpr int block_count = 128;

    PodNetwork() {
        for (int i = 0; i < block_count; ++i) {
            int block = i < 12 ? 244 + i : 128 + (i - 12);
            if (claim(block)) return;
        }
        throw std::runtime_error("no free pod address block: " + std::to_string(block_count) +
                                 " simulated clusters already run on this host (127.128.0.0 to 127.255.255.255)");
    }
    ~PodNetwork() {
        if (fd_ >= 0) ::close(fd_);
    }
    PodNetwork(const PodNetwork&) = delete;
    PodNetwork& operator=(const PodNetwork&) = delete;

    /// The second octet of every address handed out here.
    int block() const { return block_; }

    /// The next address for a pod on the node at `node_index` (0-based).
    std::string pod_ip(std::size_t node_index) {
        return "127." + std::to_string(block_) + "." + std::to_string(node_index % 255 + 1) + "." +
               std::to_string(++counter_ % 250 + 2);
    }

private:
    bool claim(int block) {
        int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
        if (fd < 0) throw std::runtime_error(std::string("socket: ") + std::strerror(errno));
        sockaddr_un addr{};
        addr.sun_family = AF_UNIX;
        std::string name = "vck-sandbox-pod-network-127." + std::to_string(block);
        // Abstract namespace: a leading NUL, no file.
        std::memcpy(addr.sun_path + 1, name.data(), name.size());
        auto len = static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + 1 + name.size());
        if (::bind(fd, reinterpret_cast<const sockaddr*>(&addr), len) != 0) {
            ::close(fd);
            return false;
        }
        fd_ = fd;
        block_ = block;
        return true;
    }

    int fd_ = -1;
    int block_ = 0;
    unsigned counter_ = 0;
};

} // namespace vck::sandbox
