#include "config/config_doc.h"

#include <initializer_list>
#include <string_view>

#include "config/options.h"

namespace ibsm::config {
namespace {

constexpr size_t kCommentWidth = 110;

std::string_view sectionOf(std::string_view key) {
  size_t dot = key.find('.');
  return dot == std::string_view::npos ? std::string_view{} : key.substr(0, dot);
}

std::string_view leafOf(std::string_view key) {
  size_t dot = key.find('.');
  return dot == std::string_view::npos ? key : key.substr(dot + 1);
}

// `text` as '#' comment lines indented by `indent`, wrapped at kCommentWidth.
std::string comment(std::string_view text, size_t indent) {
  std::string out, line;
  auto flush = [&] {
    out += std::string(indent, ' ') + "#" + line + "\n";
    line.clear();
  };
  size_t pos = 0;
  while (pos < text.size()) {
    size_t start = text.find_first_not_of(' ', pos);
    if (start == std::string_view::npos) break;
    size_t end = std::min(text.find(' ', start), text.size());
    std::string_view word = text.substr(start, end - start);
    if (!line.empty() && indent + 1 + line.size() + 1 + word.size() > kCommentWidth) flush();
    line += ' ';
    line += word;
    pos = end;
  }
  if (!line.empty()) flush();
  return out;
}

// What the value may be: the validator's range for numbers, else the documented values.
std::string valuesOf(const Option& o) {
  return o.range.empty() ? std::string(o.values) : o.range;
}

std::string defaultOf(const Option& o) {
  return o.defaultText.empty() ? o.format(Config{}) : std::string(o.defaultText);
}

// Appends the pieces one by one: GCC 12 at -O3 reports a false -Wrestrict for "literal" + std::string
// temporaries.
void append(std::string& out, std::initializer_list<std::string_view> pieces) {
  for (std::string_view p : pieces) out += p;
}

// scdoc's inline markup characters, escaped.
std::string scdocText(std::string_view text) {
  std::string out;
  for (char c : text) {
    if (c == '\\' || c == '*' || c == '_' || c == '`') out += '\\';
    out += c;
  }
  return out;
}

}  // namespace

std::string exampleConfig() {
  std::string out =
      "# ibsmd configuration: every key with its default value. Install as /etc/ibsm/ibsm.yaml; a missing "
      "default\n"
      "# file means all defaults. Unknown keys are errors. Keys marked [restart] are not reloadable: a "
      "SIGHUP "
      "that\n"
      "# changes one is refused and the running config stays. All other keys take effect on SIGHUP.\n"
      "# Command-line overrides use the dotted names: ibsmd --set routing.lmc=2 --set "
      "routing.engines=updn,minhop\n"
      "# Generated from the option table (config/options.cc) by `ninja config-example`; see also "
      "ibsm.yaml(5).\n";
  std::string_view section = "-";
  for (const Option& o : optionTable()) {
    std::string_view s = sectionOf(o.key);
    size_t indent = s.empty() ? 0 : 2;
    if (s != section) {
      out += "\n";
      if (!s.empty()) out += std::string(s) + ":\n";
      section = s;
    }
    std::string text = o.reloadable ? "" : "[restart] ";
    text += o.description;
    std::string values = valuesOf(o);
    if (!values.empty()) text += " Values: " + values + ".";
    if (!o.defaultText.empty()) text += " Default: " + std::string(o.defaultText) + ".";
    out += comment(text, indent);
    std::string pad(indent, ' ');
    if (o.example.empty())
      out += pad + std::string(leafOf(o.key)) + ": " + o.format(Config{}) + "\n";
    else
      out += pad + "# " + std::string(leafOf(o.key)) + ": " + std::string(o.example) + "\n";
  }
  return out;
}

std::string manPageOptions() {
  std::string out;
  std::string_view section = "-";
  for (const Option& o : optionTable()) {
    std::string_view s = sectionOf(o.key);
    if (s != section) {
      out += "## " + (s.empty() ? std::string("Top level") : std::string(s)) + "\n\n";
      section = s;
    }
    append(out, {"*", scdocText(o.key), "*: ", scdocText(valuesOf(o)), "\n"});
    append(out, {"\tDefault: ", scdocText(defaultOf(o)), ". ",
                 o.reloadable ? "Reloadable (SIGHUP)." : "Needs a restart.", "\n\n"});
    append(out, {"\t", scdocText(o.description), "\n\n"});
  }
  return out;
}

}  // namespace ibsm::config
