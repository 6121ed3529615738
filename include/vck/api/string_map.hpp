// StringMap: the string-to-string maps of the API (labels, annotations, options, capacity,
// ConfigMap data) as one sorted vector instead of a tree: a cached object carries several, and
// a tree node costs twice the bytes of its two strings. Interface: the part of std::map the
// code uses (find/at/operator[]/emplace/insert_or_assign/erase/count/contains, iteration in
// key order, comparison), with string_view lookups. Guarantees: keys are unique and iterated
// in ascending order; emplace never overwrites; iterators and references are invalidated by
// any insertion or erasure (as for a vector). Boost.JSON sees it as a JSON object.
#pragma once

#include <algorithm>
#include <compare>
#include <cstddef>
#include <initializer_list>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace vck::api {

class StringMap {
public:
    using key_type = std::string;
    using mapped_type = std::string;
    using value_type = std::pair<std::string, std::string>;
    using size_type = std::size_t;
    using iterator = std::vector<value_type>::iterator;
    using const_iterator = std::vector<value_type>::const_iterator;

    StringMap() = default;
    StringMap(std::initializer_list<value_type> init) {
        for (const auto& kv : init) insert_or_assign(kv.first, kv.second);
    }
    template <class It>
    StringMap(It first, It last) {
        for (; first != last; ++first) emplace(first->first, first->second);
    }

    iterator begin() { return items_.begin(); }
    iterator end() { return items_.end(); }
    const_iterator begin() const { return items_.begin(); }
    const_iterator end() const { return items_.end(); }
    const_iterator cbegin() const { return items_.begin(); }
    const_iterator cend() const { return items_.end(); }
    size_type size() const { return items_.size(); }
    bool empty() const { return items_.empty(); }
    void clear() { items_.clear(); }
    void reserve(size_type n) { items_.reserve(n); }

    iterator find(std::string_view k) {
        auto it = lower(k);
        return it != items_.end() && it->first == k ? it : items_.end();
    }
    const_iterator find(std::string_view k) const {
        auto it = lower(k);
        return it != items_.end() && it->first == k ? it : items_.end();
    }
    size_type count(std::string_view k) const { return find(k) == end() ? 0 : 1; }
    bool contains(std::string_view k) const { return find(k) != end(); }

    const std::string& at(std::string_view k) const {
        auto it = find(k);
        if (it == end()) throw std::out_of_range("no key \"" + std::string(k) + "\"");
        return it->second;
    }
    std::string& at(std::string_view k) {
        auto it = find(k);
        if (it == end()) throw std::out_of_range("no key \"" + std::string(k) + "\"");
        return it->second;
    }
    std::string& operator[](std::string_view k) { return emplace(std::string(k), std::string()).first->second; }

    /// Inserts unless the key exists; returns the entry and whether it was inserted.
    template <class K, class V>
    std::pair<iterator, bool> emplace(K&& k, V&& v) {
        std::string_view kv(k);
        auto it = lower(kv);
        if (it != items_.end() && it->first == kv) return {it, false};
        return {items_.emplace(it, std::string(std::forward<K>(k)), std::string(std::forward<V>(v))), true};
    }
    std::pair<iterator, bool> emplace(value_type kv) { return emplace(std::move(kv.first), std::move(kv.second)); }
    std::pair<iterator, bool> insert(value_type kv) { return emplace(std::move(kv)); }

    template <class K, class V>
    std::pair<iterator, bool> insert_or_assign(K&& k, V&& v) {
        auto [it, inserted] = emplace(std::forward<K>(k), std::string());
        it->second = std::string(std::forward<V>(v));
        return {it, inserted};
    }

    size_type erase(std::string_view k) {
        auto it = find(k);
        if (it == end()) return 0;
        items_.erase(it);
        return 1;
    }
    iterator erase(const_iterator it) { return items_.erase(it); }

    friend bool operator==(const StringMap&, const StringMap&) = default;
    friend auto operator<=>(const StringMap& a, const StringMap& b) { return a.items_ <=> b.items_; }

private:
    iterator lower(std::string_view k) {
        return std::lower_bound(items_.begin(), items_.end(), k, [](const value_type& e, std::string_view key) { return e.first < key; });
    }
    const_iterator lower(std::string_view k) const {
        return std::lower_bound(items_.begin(), items_.end(), k, [](const value_type& e, std::string_view key) { return e.first < key; });
    }

    std::vector<value_type> items_;
};

} // namespace vck::api
