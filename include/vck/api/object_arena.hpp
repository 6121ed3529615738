// ObjectArena: the memory of one decoded object's JSON DOM (the members its type does not model,
// json::value members). While the decoder fills the object it hands out memory from a few
// blocks by bumping a pointer, so a value costs no malloc and frees nothing alone; the blocks go
// when the last json::storage_ptr to the arena does, that is with the object. seal() ends that:
// from then on the arena allocates from the heap and frees what it allocated there, so a sealed
// arena can be shared by threads (a copy of a cached object's DOM allocates in its source's
// storage) and never grows. The decoder seals before the object is published.
// Contract: allocate/deallocate before seal() from one thread only; after it, from any.
#pragma once

#include <boost/json/memory_resource.hpp>
#include <boost/json/storage_ptr.hpp>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <new>

namespace vck::api {

class ObjectArena final : public boost::json::memory_resource {
public:
    /// A shared arena (it lives as long as a storage_ptr to it) whose first block has
    /// `first_block` bytes (the decoder passes what the previous object of the type used, so
    /// that one block is usually enough); `self` is set to the arena.
    static boost::json::storage_ptr make(std::size_t first_block, ObjectArena*& self) {
        return boost::json::make_shared_resource<ObjectArena>(first_block, self);
    }

    ObjectArena(std::size_t first_block, ObjectArena*& self) : next_size_(std::max<std::size_t>(first_block, kMinBlock)) {
        self = this;
    }
    ObjectArena(const ObjectArena&) = delete;
    ObjectArena& operator=(const ObjectArena&) = delete;
    ~ObjectArena() override {
        while (blocks_) {
            Block* b = blocks_;
            blocks_ = b->next;
            ::operator delete(b);
        }
    }

    void seal() { sealed_ = true; }
    bool sealed() const { return sealed_; }
    /// Bytes handed out from the blocks, alignment padding included.
    std::size_t used() const { return used_; }

private:
    struct Block {
        Block* next;
        std::size_t size;  // bytes after the header
        char* data() { return reinterpret_cast<char*>(this + 1); }
    };
    static constexpr std::size_t kMinBlock = 256;

    void* do_allocate(std::size_t n, std::size_t align) override {
        if (sealed_) return ::operator new(n, std::align_val_t(align));
        auto at = (reinterpret_cast<std::uintptr_t>(cur_) + align - 1) & ~(std::uintptr_t(align) - 1);
        if (!cur_ || at + n > reinterpret_cast<std::uintptr_t>(end_)) {
            grow(n + align);
            at = (reinterpret_cast<std::uintptr_t>(cur_) + align - 1) & ~(std::uintptr_t(align) - 1);
        }
        used_ += at + n - reinterpret_cast<std::uintptr_t>(cur_);
        cur_ = reinterpret_cast<char*>(at + n);
        return reinterpret_cast<void*>(at);
    }

    void do_deallocate(void* p, std::size_t n, std::size_t align) override {
        for (Block* b = blocks_; b; b = b->next)
            if (p >= b->data() && p < b->data() + b->size) return;  // freed with the arena
#if defined(__cpp_sized_deallocation)
        ::operator delete(p, n, std::align_val_t(align));
#else
        (void)n;  // clang before 19 leaves sized deallocation off unless -fsized-deallocation
        ::operator delete(p, std::align_val_t(align));
#endif
    }

    bool do_is_equal(const boost::json::memory_resource& other) const noexcept override { return this == &other; }

    void grow(std::size_t at_least) {
        std::size_t size = std::max(next_size_, at_least);
        static_assert(alignof(Block) <= __STDCPP_DEFAULT_NEW_ALIGNMENT__);
        auto* b = static_cast<Block*>(::operator new(sizeof(Block) + size));
        b->next = blocks_;
        b->size = size;
        blocks_ = b;
        cur_ = b->data();
        end_ = cur_ + size;
        next_size_ = size * 2;
    }

    Block* blocks_ = nullptr;
    char* cur_ = nullptr;
    char* end_ = nullptr;
    std::size_t next_size_;
    std::size_t used_ = 0;
    bool sealed_ = false;
};

} // namespace vck::api
