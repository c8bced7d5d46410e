#include "config/config.hpp"

namespace strata {

const char* device_name(Device d) {
  switch (d) {
    case Device::Auto: return "auto";
    case Device::Cpu: return "cpu";
    case Device::Cuda: return "cuda";
  }
  return "?";
}

const char* spec_mode_name(SpecMode m) {
  switch (m) {
    case SpecMode::Off: return "off";
    case SpecMode::Ngram: return "ngram";
    case SpecMode::Draft: return "draft";
  }
  return "?";
}

}  // namespace strata
