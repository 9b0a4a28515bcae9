// A FIFO between two units' threads with back-pressure: push() blocks while `capacity` items are
// in it (0: unbounded), front() blocks while it is empty, and an item leaves only when the
// consumer pops it — so an item being worked on still takes its place, as in a hardware FIFO
// whose entry frees when the consumer is done with it. Hand-offs are delta notifications.
#pragma once

#include <cstddef>
#include <deque>

#include <systemc>

namespace octasim {

template <class T>
class BoundedChannel {
 public:
  explicit BoundedChannel(std::size_t capacity = 0) : capacity_(capacity) {}

  // Inside the producer's thread: returns once an item fits (the producer's write stall).
  void wait_for_room() {
    while (capacity_ != 0 && items_.size() >= capacity_) sc_core::wait(popped_);
  }
  void push(const T& item) {
    wait_for_room();
    items_.push_back(item);
    pushed_.notify(sc_core::SC_ZERO_TIME);
  }
  // Inside the consumer's thread: the oldest item, once there is one.
  [[nodiscard]] const T& front() {
    while (items_.empty()) sc_core::wait(pushed_);
    return items_.front();
  }
  void pop() {
    items_.pop_front();
    popped_.notify(sc_core::SC_ZERO_TIME);
  }
  [[nodiscard]] bool empty() const { return items_.empty(); }
  [[nodiscard]] std::size_t size() const { return items_.size(); }
  [[nodiscard]] std::size_t capacity() const { return capacity_; }
  void clear() { items_.clear(); }

 private:
  std::size_t capacity_;
  std::deque<T> items_;
  sc_core::sc_event pushed_, popped_;
};

}  // namespace octasim
