// PeerPlan: one download pod's part in peer fill (handlers/peer_fill.hpp): whether it serves
// its copy to the volume's other download pods, which peers it takes files from (URLs, nearest
// first, the store after them), and the Secret holding the volume's peer certificate. A plain
// value, so that handler interfaces need nothing of how peer fill is done.
#pragma once

#include <string>
#include <vector>

namespace vck::handlers {

struct PeerPlan {
    bool serve = false;
    std::vector<std::string> peers;
    std::string secret;
    bool active() const { return serve || !peers.empty(); }
};

} // namespace vck::handlers
