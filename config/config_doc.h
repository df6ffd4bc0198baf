// The configuration's documentation, generated from the option table (config/options.cc) so that it cannot
// drift from what the loader accepts: config/ibsm.yaml.example (checked in; tests/config compares it with
// exampleConfig()) and the OPTIONS section of ibsm.yaml(5) (generated at build time, docs/man).
#pragma once

#include <string>

namespace ibsm::config {

// Every key with its default (or an example, commented out) and its description as YAML comments. It parses
// to Config{}.
std::string exampleConfig();

// scdoc source of the options, one entry per key grouped by section: name, values or range, default,
// whether a reload applies it, description.
std::string manPageOptions();

}  // namespace ibsm::config
