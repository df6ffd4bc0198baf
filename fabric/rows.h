// Per-switch rows (an LFT, an AR table, an SL row) that versions of the routing tables share, and the nodes
// that versions of a topology share: copying Rows copies pointers, and a row is cloned only when it is
// written while another version holds it (copy on write). A repair that moves the routes of a few switches
// thus costs their rows only, and the tables published to the programmers, the SA, the control socket and
// the rebalancing run share all the others; a re-discovery copies only the nodes it changes.
// A Rows object is written by one thread (its owner); the versions it shares rows with are only read.
#pragma once

#include <algorithm>
#include <array>
#include <cstddef>
#include <initializer_list>
#include <iterator>
#include <memory>
#include <string_view>
#include <type_traits>
#include <unordered_map>
#include <vector>

namespace ibsm::fabric {

// Forward iterator over c[0], c[1], ... through C's const operator[] (Rows and Blocks are indexed, not
// stored contiguously).
template <typename C, typename T>
class IndexIterator {
 public:
  using iterator_category = std::forward_iterator_tag;
  using value_type = T;
  using difference_type = std::ptrdiff_t;
  using pointer = const T*;
  using reference = const T&;
  IndexIterator(const C* c, size_t i) : c_(c), i_(i) {}
  const T& operator*() const { return (*c_)[i_]; }
  IndexIterator& operator++() {
    ++i_;
    return *this;
  }
  bool operator==(const IndexIterator& o) const { return i_ == o.i_; }

 private:
  const C* c_;
  size_t i_;
};

template <typename Row>
class Rows {
 public:
  Rows() = default;

  size_t size() const { return rows_.size(); }
  bool empty() const { return rows_.empty(); }
  void clear() { rows_.clear(); }
  void reserve(size_t n) { rows_.reserve(n); }
  void resize(size_t n) { rows_.resize(n); }  // new rows are empty
  void push_back(Row row) { rows_.push_back(std::make_shared<Row>(std::move(row))); }
  // Appends other's row j, shared.
  void pushShared(const Rows& other, size_t j) { rows_.push_back(other.rows_[j]); }
  // n rows equal to `row`, sharing one copy until each is written.
  void assign(size_t n, const Row& row) { rows_.assign(n, std::make_shared<Row>(row)); }

  const Row& operator[](size_t i) const { return rows_[i] ? *rows_[i] : emptyRow(); }
  // For writing: the row is this version's own from here on.
  Row& operator[](size_t i) {
    std::shared_ptr<Row>& p = rows_[i];
    if (!p)
      p = std::make_shared<Row>();
    else if (p.use_count() > 1)
      p = std::make_shared<Row>(*p);
    return *p;
  }
  // Row i becomes other's row j, shared.
  void share(size_t i, const Rows& other, size_t j) { rows_[i] = other.rows_[j]; }
  // Row i itself (null for a row never written), for a reader that remembers which version it acted on.
  std::shared_ptr<const Row> row(size_t i) const { return rows_[i]; }
  // Whether row i is the very row j of other (then they are equal without comparing them).
  bool sameRow(size_t i, const Rows& other, size_t j) const { return rows_[i] == other.rows_[j]; }

  using const_iterator = IndexIterator<Rows, Row>;
  const_iterator begin() const { return {this, 0}; }
  const_iterator end() const { return {this, rows_.size()}; }

  friend bool operator==(const Rows& a, const Rows& b) {
    if (a.size() != b.size()) return false;
    for (size_t i = 0; i < a.size(); ++i)
      if (a.rows_[i] != b.rows_[i] && a[i] != b[i]) return false;
    return true;
  }
  friend bool operator==(const Rows& a, const std::vector<Row>& b) {
    if (a.size() != b.size()) return false;
    for (size_t i = 0; i < a.size(); ++i)
      if (a[i] != b[i]) return false;
    return true;
  }

 private:
  static const Row& emptyRow() {
    static const Row kEmpty{};
    return kEmpty;
  }
  std::vector<std::shared_ptr<Row>> rows_;
};

// A long row as blocks of N entries that copies of it share: a copy copies N-times fewer pointers than
// entries, and writing an entry clones its block only (copy on write, as Rows does per row). For the LFTs and
// the AR tables' LID-to-group rows, of which a repair changes a few LIDs on many switches. Same threading
// rule as Rows: written by its owner only.
template <typename T, size_t N = 256>
class Blocks {
 public:
  static constexpr size_t kBlock = N;

  Blocks() = default;
  Blocks(std::initializer_list<T> values) {
    resize(values.size(), T{});
    size_t i = 0;
    for (const T& v : values) (*this)[i++] = v;
  }

  size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  void clear() { assign(0, T{}); }
  const T& operator[](size_t i) const { return (*blocks_[i / N])[i % N]; }
  T& operator[](size_t i) { return writableBlock(i / N)[i % N]; }
  void assign(size_t n, const T& value) {
    blocks_.clear();
    size_ = 0;
    resize(n, value);
  }
  // New entries are `value`; the blocks of a shrunk row keep their stale tail (never read).
  void resize(size_t n, const T& value) {
    for (size_t i = size_; i < n && i % N; ++i) (*this)[i] = value;
    if (n > blocks_.size() * N) {
      auto fill = std::make_shared<Block>();
      fill->fill(value);
      blocks_.resize((n + N - 1) / N, fill);  // shared until written
    }
    blocks_.resize((n + N - 1) / N);
    size_ = n;
  }

  using const_iterator = IndexIterator<Blocks, T>;
  using iterator = const_iterator;
  using value_type = T;
  const_iterator begin() const { return {this, 0}; }
  const_iterator end() const { return {this, size_}; }

  // Block k's N entries for writing (cloned first when shared): for filling a row a block at a time.
  T* writableBlock(size_t k) {
    std::shared_ptr<Block>& b = blocks_[k];
    if (b.use_count() > 1) b = std::make_shared<Block>(*b);
    return b->data();
  }

  // Makes blocks with equal entries one shared block: a row whose blocks repeat (an AR row where most LIDs
  // share one group) then costs a few blocks. Writing an entry later clones its block as usual.
  void shareEqualBlocks() {
    static_assert(std::has_unique_object_representations_v<T>);
    std::unordered_map<std::string_view, std::shared_ptr<Block>> seen;
    for (std::shared_ptr<Block>& b : blocks_) {
      auto [it, fresh] =
          seen.try_emplace(std::string_view(reinterpret_cast<const char*>(b->data()), sizeof(Block)), b);
      if (!fresh) b = it->second;
    }
  }

  // Whether block k (entries k*N ..) is the very block k of other (then they are equal without comparing).
  bool sameBlock(size_t k, const Blocks& other) const {
    return k < blocks_.size() && k < other.blocks_.size() && blocks_[k] == other.blocks_[k];
  }

  friend bool operator==(const Blocks& a, const std::vector<T>& b) {
    return a.size_ == b.size() && std::equal(a.begin(), a.end(), b.begin());
  }
  friend bool operator==(const Blocks& a, const Blocks& b) {
    if (a.size_ != b.size_) return false;
    for (size_t k = 0; k < a.blocks_.size(); ++k) {
      if (a.blocks_[k] == b.blocks_[k]) continue;
      for (size_t i = k * N; i < std::min(a.size_, (k + 1) * N); ++i)
        if (a[i] != b[i]) return false;
    }
    return true;
  }

 private:
  using Block = std::array<T, N>;
  std::vector<std::shared_ptr<Block>> blocks_;
  size_t size_ = 0;
};

}  // namespace ibsm::fabric
