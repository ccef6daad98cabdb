// HubOptions::from_env: the environment variables huggingface_hub reads, with its defaults.
#include <cctype>
#include <cstdlib>
#include <fstream>
#include <sstream>

#include "hfstatic/hub.h"

namespace hfs::hub {
namespace {

std::string env(const char* name) {
  const char* v = std::getenv(name);
  return v ? std::string(v) : std::string();
}

std::string trim(std::string s) {
  const char* ws = " \t\r\n";
  s.erase(0, s.find_first_not_of(ws));
  s.erase(s.find_last_not_of(ws) + 1);
  return s;
}

bool truthy(std::string v) {
  for (char& c : v) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return v == "1" || v == "true" || v == "yes" || v == "on";
}

}  // namespace

HubOptions HubOptions::from_env() {
  HubOptions o;
  if (std::string e = trim(env("HF_ENDPOINT")); !e.empty()) {
    while (!e.empty() && e.back() == '/') e.pop_back();
    o.endpoint = e;
  }
  std::string home = env("HF_HOME");
  if (home.empty()) {
    const std::string xdg = env("XDG_CACHE_HOME");
    const std::string user = env("HOME");
    home = (!xdg.empty() ? xdg : (user.empty() ? std::string("/tmp") : user + "/.cache")) + "/huggingface";
  }
  o.cache_dir = env("HF_HUB_CACHE");
  if (o.cache_dir.empty()) o.cache_dir = env("HUGGINGFACE_HUB_CACHE");  // huggingface_hub's older name
  if (o.cache_dir.empty()) o.cache_dir = home + "/hub";
  o.token = trim(env("HF_TOKEN"));
  if (o.token.empty()) {
    const std::string path = env("HF_TOKEN_PATH");
    std::ifstream f(path.empty() ? home + "/token" : path);
    std::stringstream ss;
    ss << f.rdbuf();
    o.token = trim(ss.str());
  }
  o.offline = truthy(env("HF_HUB_OFFLINE"));
  return o;
}

}  // namespace hfs::hub
