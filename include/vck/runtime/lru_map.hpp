// LruMap: a map that keeps at most `capacity` entries, dropping the least recently used one
// when a new key would exceed it (client-go bounds its event caches the same way, with 4096
// entries). For per-object bookkeeping that must not grow with every object a long-running
// controller has ever seen. Guarantees: size() <= capacity() always; find() and
// get_or_insert() make the key the most recently used; capacity 0 is refused. Not
// thread-safe: callers lock.
#pragma once

#include <cstddef>
#include <iterator>
#include <list>
#include <map>
#include <stdexcept>
#include <utility>

namespace vck::runtime {

template <class K, class V>
class LruMap {
public:
    explicit LruMap(std::size_t capacity) : capacity_(capacity) {
        if (capacity == 0) throw std::invalid_argument("lru map: capacity must be at least 1");
    }

    /// The value for `k` (now the most recently used), or nullptr.
    V* find(const K& k) {
        auto it = index_.find(k);
        if (it == index_.end()) return nullptr;
        touch(it->second);
        return &it->second->second;
    }

    /// The value for `k`, value-initialised if absent (evicting the least recently used entry
    /// when full); `inserted` tells which.
    V& get_or_insert(const K& k, bool* inserted = nullptr) {
        if (auto it = index_.find(k); it != index_.end()) {
            touch(it->second);
            if (inserted) *inserted = false;
            return it->second->second;
        }
        if (order_.size() == capacity_) {
            index_.erase(order_.back().first);
            order_.pop_back();
        }
        order_.emplace_front(k, V{});
        index_.emplace(k, order_.begin());
        if (inserted) *inserted = true;
        return order_.front().second;
    }

    void erase(const K& k) {
        if (auto it = index_.find(k); it != index_.end()) {
            order_.erase(it->second);
            index_.erase(it);
        }
    }

    std::size_t size() const { return order_.size(); }
    std::size_t capacity() const { return capacity_; }

private:
    using Order = std::list<std::pair<K, V>>;  // most recently used first

    void touch(typename Order::iterator it) { order_.splice(order_.begin(), order_, it); }

    std::size_t capacity_;
    Order order_;
    std::map<K, typename Order::iterator> index_;
};

} // namespace vck::runtime
