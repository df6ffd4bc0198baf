// ibsmctl's output for people: each command's result (the "result" object of a control protocol response) as
// aligned tables or short reports. Pure: JSON in, text out, so it is unit-tested without a daemon.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

namespace ibsm::ctl {

// Columns padded to the widest cell; columns marked right-aligned (numbers) are padded on the left. The last
// column is not padded (descriptions may be long).
class Table {
 public:
  explicit Table(std::vector<std::string> header, std::vector<bool> rightAligned = {});
  void add(std::vector<std::string> row);
  std::string str() const;
  size_t rows() const { return rows_.size(); }

 private:
  std::vector<std::string> header_;
  std::vector<bool> right_;
  std::vector<std::vector<std::string>> rows_;
};

struct Formatted {
  std::string text;
  int exitCode = 0;  // 1 when the result reports a failure (path not reached, check found problems, ...)
};

// `now` (Unix milliseconds) is used for "since ... (3m12s ago)"; times are printed in local time.
Formatted formatResult(const std::string& command, const nlohmann::json& result, int64_t nowMs);

// "2-5,7" from a sorted list of numbers.
std::string ranges(const std::vector<unsigned>& values);
// "3m12s", "2h05m", "4d03h".
std::string duration(int64_t ms);

// Help text: `text` reflowed (newlines count as spaces) into lines of at most `width` columns, every line
// after the first indented by `indent` spaces, each ending in a newline. A word longer than a line gets a
// line of its own rather than being cut.
std::string wrap(std::string_view text, size_t width, size_t indent);
// One entry of a help list: "  HEAD" and then `text` from column `column`, wrapped to `width` with the same
// indent; on the next line when HEAD reaches into that column.
std::string helpEntry(std::string_view head, std::string_view text, size_t column, size_t width);

}  // namespace ibsm::ctl
