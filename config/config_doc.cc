#include "config/config_doc.h"

#include <algorithm>
#include <initializer_list>
#include <string_view>
#include <vector>

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

// The options in table order, but each section's together (in the order sections first appear): an option
// added at the end of the table still lands in its section, and YAML gets no section twice.
std::vector<const Option*> bySection() {
  std::vector<std::string_view> sections;
  for (const Option& o : optionTable()) {
    if (std::find(sections.begin(), sections.end(), sectionOf(o.key)) == sections.end())
      sections.push_back(sectionOf(o.key));
  }
  std::vector<const Option*> out;
  for (std::string_view s : sections) {
    for (const Option& o : optionTable())
      if (sectionOf(o.key) == s) out.push_back(&o);
  }
  return out;
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
      R"(# ibsmd configuration: every key with its default value. Install as /etc/ibsm/ibsm.yaml; a missing default
# file means all defaults. Unknown keys are errors. Keys marked [restart] are not reloadable: a SIGHUP that
# changes one is refused and the running config stays. All other keys take effect on SIGHUP.
# Command-line overrides use the dotted names: ibsmd --set routing.lmc=2 --set routing.engines=updn,minhop
# Generated from the option table (config/options.cc) by `ninja config-example`; see also ibsm.yaml(5).
)";
  std::string_view section = "-";
  for (const Option* o : bySection()) {
    std::string_view s = sectionOf(o->key);
    size_t indent = s.empty() ? 0 : 2;
    if (s != section) {
      out += "\n";
      if (!s.empty()) append(out, {s, ":\n"});
      section = s;
    }
    std::string text = o->reloadable ? "" : "[restart] ";
    text += o->description;
    std::string values = valuesOf(*o);
    if (!values.empty()) append(text, {" Values: ", values, "."});
    if (!o->defaultText.empty()) append(text, {" Default: ", o->defaultText, "."});
    out += comment(text, indent);
    out.append(indent, ' ');
    if (o->example.empty())
      append(out, {leafOf(o->key), ": ", o->format(Config{}), "\n"});
    else
      append(out, {"# ", leafOf(o->key), ": ", o->example, "\n"});
  }
  return out;
}

std::string manPageOptions() {
  std::string out;
  std::string_view section = "-";
  for (const Option* o : bySection()) {
    std::string_view s = sectionOf(o->key);
    if (s != section) {
      append(out, {"## ", s.empty() ? std::string_view("Top level") : s, "\n\n"});
      section = s;
    }
    append(out, {"*", scdocText(o->key), "*: ", scdocText(valuesOf(*o)), "\n"});
    append(out, {"\tDefault: ", scdocText(defaultOf(*o)), ". ",
                 o->reloadable ? "Reloadable (SIGHUP)." : "Needs a restart.", "\n\n"});
    append(out, {"\t", scdocText(o->description), "\n\n"});
  }
  return out;
}

}  // namespace ibsm::config
