// `dcr bench <name>`: benchmarks. Today: `dcr bench codec`.
#include <boost/program_options.hpp>

#include <cstdio>
#include <iostream>
#include <string>

#include "dcr/bench/codec_bench.h"
#include "dcr/core/number_list.h"
#include "src/cli/commands.h"
#include "src/cli/program_options.h"
#include "dcr/refit/options.h"

namespace po = boost::program_options;

namespace dcr::cli {

namespace {

int run_codec(int argc, char** argv) {
  CodecBenchOptions o;
  std::string rates = "0.5,1,3,5", json, config, contexts = "auto";
  po::options_description desc(
      "dcr bench codec: encode every frame of a model after a realistic BF16 training step and apply it back.\n"
      "Reports wire bytes vs the entropy bound and two reference encodings, encode/apply GB/s beside memcpy\n"
      "GB/s measured in the same run, and whether the applied bits equal the target bit for bit.\n\noptions");
  desc.add_options()
      ("help,h", "show this help")
      ("config", po::value(&config), "INI file with any of these options (command-line options win), e.g. configs/bench_codec.ini")
      ("model", po::value(&o.model)->default_value(o.model), "model preset: tiny, small, medium, large")
      ("weights", po::value(&o.weights)->default_value(o.weights),
       "master weights: auto (real weights when fetched by scripts/fetch_weights.sh, else seeded), none, esrgan-medium, faceres-deep")
      ("rates", po::value(&rates)->default_value(rates), "changed fractions in percent, comma separated")
      ("dense", po::value(&o.dense)->default_value(o.dense), "also run a dense step (about 90% of values change)")
      ("uniform", po::value(&o.uniform)->default_value(o.uniform), "also run the synthetic uniform injection at 3% and 5%")
      ("frame-elements", po::value(&o.frame_elements)->default_value(o.frame_elements), "elements per frame (canonical range)")
      ("bundle-below", po::value(&o.bundle_below)->default_value(o.bundle_below),
       "tensors with fewer elements share bundle frames of up to --frame-elements (0: every tensor its own frames)")
      ("contexts", po::value(&contexts)->default_value(contexts),
       "value packing contexts (value tokens by the base value's exponent): auto or true (wherever smaller: with no "
       "link to weigh, auto is the refit's choice for a slow link), false")
      ("reps", po::value(&o.repetitions)->default_value(o.repetitions),
       "timed passes per case (speeds: medians over them, ratios paired within each)")
      ("encode-threads", po::value(&o.encode_threads)->default_value(o.encode_threads),
       "also encode on this many threads, frames in flight, beside a memcpy on as many")
      ("seed", po::value(&o.seed)->default_value(o.seed), "seed of the change model")
      ("checkpoints", po::value(&o.checkpoints),
       "benchmark consecutive pairs of real checkpoints instead of the change model: a glob of HF checkpoint "
       "directories (natural order), e.g. '/tmp/run/rate-3/step-*' from scripts/make_training_run.py")
      ("serve-quant", po::value(&o.serve_quant)->default_value(o.serve_quant),
       "with --checkpoints: fp8-block also benches each pair as rollouts serving block FP8 receive it (E4M3 bytes "
       "and weight_scale_inv per 128 x 128 block), beside the checkpoint's own delta")
      ("exhaustive", po::bool_switch(&o.exhaustive), "write every coding candidate and keep the smallest (slower)")
      ("json", po::value(&json), "also write the records as JSON to this file");
  po::variables_map vm;
  Status parsed = parse_program_options(argc, argv, desc, &vm);
  if (parsed.is_ok()) parsed = parse_number_list(rates, "--rates", 100, &o.rates);
  RefitOptions modes;  // --contexts as dcr refit takes it (its options table)
  if (parsed.is_ok()) parsed = options::set_by_name(refit_option_table(), "contexts", contexts, &modes);
  o.contexts = modes.contexts != ContextMode::off;
  if (!parsed.is_ok()) {
    std::fprintf(stderr, "dcr bench codec: %s\n\n", parsed.message().c_str());
    std::cerr << desc << "\n";
    return 2;
  }
  if (vm.count("help")) {
    std::cout << desc << "\n";
    return 0;
  }
  CodecBenchReport report;
  Status s = run_codec_bench(o, &report);
  if (s.is_ok()) {
    print_codec_bench(report);
    if (!json.empty()) s = write_codec_bench_json(report, json);
  }
  if (!s.is_ok()) {
    std::fprintf(stderr, "dcr bench codec: %s\n", s.to_string().c_str());
    return 1;
  }
  for (const CodecBenchRecord& r : report.records) {
    if (!r.bitexact) return 1;
  }
  return 0;
}

}  // namespace

int run_bench(int argc, char** argv) {
  if (argc < 2 || std::string(argv[1]) == "--help" || std::string(argv[1]) == "-h") {
    std::printf("usage: dcr bench codec [options]   (dcr bench codec --help)\n");
    return argc < 2 ? 2 : 0;
  }
  if (std::string(argv[1]) == "codec") return run_codec(argc - 1, argv + 1);
  std::fprintf(stderr, "dcr bench: unknown benchmark '%s' (available: codec)\n", argv[1]);
  return 2;
}

}  // namespace dcr::cli
