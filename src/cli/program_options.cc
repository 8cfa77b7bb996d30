#include "src/cli/program_options.h"

#include "src/core/files.h"

#include <cstdio>
#include <fstream>
#include <iostream>
#include <iterator>
#include <regex>
#include <sstream>
#include <string>

namespace dcr {

namespace po = boost::program_options;

namespace {

// Boost.Program_options builds its error messages by replacing "%name%" tokens with the values it
// was given, again and again: a value that holds such a token makes it loop forever (found by
// fuzz_config). Such text is refused before Boost sees it.
Status check_no_tokens(const std::string& text, const std::string& where) {
  static const std::regex token("%[A-Za-z_]+%");
  std::smatch m;
  DCR_REQUIRE(!std::regex_search(text, m, token), Code::invalid_argument,
              where + " contains '" + m.str() + "': text between two '%' signs is not accepted in dcr options");
  return Status::ok();
}

}  // namespace

po::typed_value<bool>* switch_value(bool* value) {
  return po::value(value)->default_value(*value)->implicit_value(true);
}

Status parse_program_options(int argc, char** argv, const po::options_description& desc, po::variables_map* vm) {
  for (int i = 1; i < argc; ++i) DCR_TRY(check_no_tokens(argv[i], "the command-line argument '" + std::string(argv[i]) + "'"));
  try {
    const po::parsed_options parsed = po::command_line_parser(argc, argv).options(desc).run();
    const std::vector<std::string> loose = po::collect_unrecognized(parsed.options, po::include_positional);
    DCR_REQUIRE(loose.empty(), Code::invalid_argument,
                "no option takes '" + (loose.empty() ? std::string() : loose[0]) + "'" +
                    (loose.size() > 1 ? " (nor " + std::to_string(loose.size() - 1) + " more words after it)" : "") +
                    ": a glob the shell expanded? Quote it, as in --checkpoints '/ck/step_*'");
    po::store(parsed, *vm);
    if (vm->count("config")) {
      const std::string path = (*vm)["config"].as<std::string>();
      DCR_TRY(files::check_regular_file(path, 1 << 20, nullptr).with_context("config file"));
      std::ifstream file(path);
      DCR_REQUIRE(file.good(), Code::not_found, "cannot open config file '" + path + "'");
      const std::string text((std::istreambuf_iterator<char>(file)), std::istreambuf_iterator<char>());
      DCR_TRY(check_no_tokens(text, "config file '" + path + "'"));
      std::istringstream in(text);
      po::store(po::parse_config_file(in, desc), *vm);
    }
    po::notify(*vm);
  } catch (const std::exception& e) {
    return Status(Code::invalid_argument, e.what());
  }
  return Status::ok();
}

int usage_error(const std::string& command, const std::string& message, const po::options_description& desc) {
  std::fprintf(stderr, "dcr %s: %s\n\n", command.c_str(), message.c_str());
  std::cerr << desc << "\n";
  return 2;
}

bool parse_in_out(int argc, char** argv, const po::options_description& desc, const std::string& command,
                  const std::string& paths, std::string* in, std::string* out, int* exit_code) {
  po::options_description files;
  files.add_options()("in", po::value(in), "input")("out", po::value(out), "output");
  po::options_description all;
  all.add(desc).add(files);
  po::positional_options_description positions;
  positions.add("in", 1).add("out", 1);
  po::variables_map vm;
  try {
    po::store(po::command_line_parser(argc, argv).options(all).positional(positions).run(), vm);
    if (vm.count("help")) {
      std::cout << desc << "\n";
      *exit_code = 0;
      return false;
    }
    po::notify(vm);
  } catch (const std::exception& e) {
    *exit_code = usage_error(command, e.what(), desc);
    return false;
  }
  if (in->empty() || out->empty()) {
    *exit_code = usage_error(command, "expects " + paths, desc);
    return false;
  }
  return true;
}

}  // namespace dcr
