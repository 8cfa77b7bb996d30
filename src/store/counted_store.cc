// counted_store: a store whose every request is counted, so a job can report what each version
// cost in requests and bytes (a follower's GETs per version, a publisher's bytes put).
#include "dcr/store/object_store.h"

namespace dcr {
namespace {

class CountedStore : public ObjectStore {
 public:
  CountedStore(std::unique_ptr<ObjectStore> inner, std::shared_ptr<StoreCounts> counts)
      : inner_(std::move(inner)), counts_(std::move(counts)) {}

  std::string describe() const override { return inner_->describe(); }
  Status put(const std::string& key, const uint8_t* data, size_t bytes, bool durable) override {
    counts_->puts++;
    counts_->put_bytes += bytes;
    return inner_->put(key, data, bytes, durable);
  }
  Status get(const std::string& key, std::vector<uint8_t>* out, bool* found, uint64_t max_bytes) override {
    counts_->gets++;
    const Status st = inner_->get(key, out, found, max_bytes);
    if (st.is_ok() && *found) counts_->get_bytes += out->size();
    return st;
  }
  Status list(const std::string& prefix, std::vector<std::string>* keys) override {
    counts_->lists++;
    return inner_->list(prefix, keys);
  }
  Status remove(const std::string& key) override {
    counts_->removes++;
    return inner_->remove(key);
  }

 private:
  std::unique_ptr<ObjectStore> inner_;
  std::shared_ptr<StoreCounts> counts_;
};

}  // namespace

StoreCounts StoreCounts::since(const StoreCounts& before) const {
  return {gets - before.gets,           lists - before.lists,         puts - before.puts,
          removes - before.removes,     get_bytes - before.get_bytes, put_bytes - before.put_bytes};
}

std::unique_ptr<ObjectStore> counted_store(std::unique_ptr<ObjectStore> inner, std::shared_ptr<StoreCounts> counts) {
  return std::make_unique<CountedStore>(std::move(inner), std::move(counts));
}

}  // namespace dcr
