// `dcr refit` options: the command line and an INI file (--config) into a RefitConfig, through the
// options table (src/job/config.h: the library's options and the application's, each with its
// name, default, range and help). Boost.Program_options reads the words; the table parses them.
#include "src/cli/refit_options.h"

#include <boost/program_options.hpp>

#include <iostream>

#include "src/cli/program_options.h"

namespace po = boost::program_options;

namespace dcr {

namespace {

const char* kAbout =
    "dcr refit: one SPMD job of trainer, relay and rollout ranks. Every step the trainers encode the\n"
    "change of their shards as frames and stream them through the relay tree; rollouts apply them in\n"
    "place in their serving layout; the root commits the version only when every rollout verified.\n"
    "Ranks: [0, trainers) train, the next `relays` relay, the rest roll out; with --relays -1 the\n"
    "lowest non-trainer rank of each node relays (one relay per rollout node, by host name).\n"
    "Example: mpirun -np 6 dcr refit --config configs/refit_local.ini\n\noptions";

// Every option as text, its default shown as the table gives it; a switch takes the bare word.
void describe(const RefitConfig& defaults, po::options_description* desc) {
  desc->add_options()("help,h", "show this help")(
      "config", po::value<std::string>(), "INI file with any of these options (command-line options win)");
  for (const Option<RefitConfig>& o : refit_config_table()) {
    po::typed_value<std::string>* value = po::value<std::string>()->default_value(o.get(defaults));
    if (o.is_switch) value->implicit_value("true");
    desc->add_options()(o.name.c_str(), value, o.help.c_str());
  }
}

}  // namespace

Status parse_refit_config(int argc, char** argv, RefitConfig* c, bool* exit_now) {
  *exit_now = false;
  po::options_description desc(kAbout);
  describe(*c, &desc);
  po::variables_map vm;
  DCR_TRY(parse_program_options(argc, argv, desc, &vm));
  if (vm.count("help")) {
    std::cout << desc << "\n";
    *exit_now = true;
    return Status::ok();
  }
  for (const Option<RefitConfig>& o : refit_config_table()) DCR_TRY(o.set(vm[o.name].as<std::string>(), c));
  return check_refit_config(*c);
}

}  // namespace dcr
