// Opening a checkpoint directory: one model.safetensors, or shards listed by model.safetensors.index.json.
#include <sys/stat.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

#include "engine/model/mapped_file.hpp"
#include "engine/model/safetensors.hpp"
#include "engine/model/weights.hpp"

namespace strata {
namespace {

bool file_exists(const std::string& p) {
  struct stat st;
  return ::stat(p.c_str(), &st) == 0 && S_ISREG(st.st_mode);
}

std::string shape_str(const std::vector<int64_t>& s) {
  std::ostringstream o;
  o << "[";
  for (size_t i = 0; i < s.size(); ++i) o << (i ? ", " : "") << s[i];
  o << "]";
  return o.str();
}

// A shard name from the index must stay inside the model directory.
bool plain_file_name(const std::string& n) {
  return !n.empty() && n.find('/') == std::string::npos && n.find('\\') == std::string::npos && n != "." &&
         n != "..";
}

}  // namespace

Checkpoint::~Checkpoint() = default;

std::unique_ptr<Checkpoint> Checkpoint::open_file(const std::string& path) {
  std::unique_ptr<Checkpoint> ck(new Checkpoint());
  ck->files_.push_back(std::make_unique<MappedFile>(path));
  for (auto& v : parse_safetensors(*ck->files_.back())) {
    std::string name = v.name;
    ck->tensors_.emplace(name, std::move(v));
  }
  return ck;
}

std::unique_ptr<Checkpoint> Checkpoint::open_dir(const std::string& dir) {
  const std::string index_path = dir + "/model.safetensors.index.json";
  const std::string single_path = dir + "/model.safetensors";
  if (!file_exists(index_path)) {
    if (!file_exists(single_path))
      throw Error(dir + ": no model.safetensors or model.safetensors.index.json");
    return open_file(single_path);
  }

  nlohmann::json index;
  {
    std::ifstream in(index_path, std::ios::binary);
    std::stringstream ss;
    ss << in.rdbuf();
    try {
      index = nlohmann::json::parse(ss.str());
    } catch (const nlohmann::json::exception& e) {
      throw Error(index_path + ": not valid JSON (" + e.what() + ")");
    }
  }
  if (!index.is_object() || !index.contains("weight_map") || !index["weight_map"].is_object())
    throw Error(index_path + ": missing object \"weight_map\"");
  const auto& wm = index["weight_map"];
  std::set<std::string> shards;
  for (auto it = wm.begin(); it != wm.end(); ++it) {
    if (!it.value().is_string()) throw Error(index_path + ": weight_map[\"" + it.key() + "\"] is not a file name");
    const std::string f = it.value().get<std::string>();
    if (!plain_file_name(f)) throw Error(index_path + ": shard name \"" + f + "\" is not a plain file name");
    shards.insert(f);
  }
  if (shards.empty()) throw Error(index_path + ": weight_map is empty");

  std::unique_ptr<Checkpoint> ck(new Checkpoint());
  std::map<std::string, std::string> found_in;  // tensor -> shard that holds it
  for (const std::string& shard : shards) {
    const std::string p = dir + "/" + shard;
    if (!file_exists(p)) throw Error(p + ": file missing (listed in model.safetensors.index.json)");
    ck->files_.push_back(std::make_unique<MappedFile>(p));
    for (auto& v : parse_safetensors(*ck->files_.back())) {
      if (found_in.count(v.name))
        throw Error(p + ": tensor " + v.name + " is also in " + found_in[v.name]);
      found_in[v.name] = shard;
      std::string name = v.name;
      ck->tensors_.emplace(name, std::move(v));
    }
  }
  for (auto it = wm.begin(); it != wm.end(); ++it) {
    const std::string shard = it.value().get<std::string>();
    auto f = found_in.find(it.key());
    if (f == found_in.end() || f->second != shard)
      throw Error(dir + "/" + shard + ": tensor " + it.key() + " listed in model.safetensors.index.json is not in it");
  }
  return ck;
}

void Checkpoint::adopt(std::unique_ptr<Checkpoint> other, const std::vector<std::string>& names) {
  for (const std::string& n : names) {
    auto it = other->tensors_.find(n);
    if (it == other->tensors_.end()) continue;
    if (tensors_.count(n) != 0) throw Error("tensor " + n + " is in both checkpoints");
    tensors_.emplace(n, it->second);
  }
  for (auto& f : other->files_) files_.push_back(std::move(f));
}

bool Checkpoint::has(const std::string& name) const { return tensors_.count(name) != 0; }

const TensorView& Checkpoint::get(const std::string& name) const {
  auto it = tensors_.find(name);
  if (it == tensors_.end()) throw Error("tensor " + name + " missing from the checkpoint");
  return it->second;
}

const TensorView& Checkpoint::get(const std::string& name, const std::vector<int64_t>& shape) const {
  const TensorView& t = get(name);
  if (t.shape != shape)
    throw Error("tensor " + name + ": expected " + shape_str(shape) + ", found " + shape_str(t.shape));
  return t;
}

}  // namespace strata
