// Contract name → IO manager factory. Concrete managers register from their own files.
#include <map>

#include "hfstatic/ext/io_contract.h"
#include "hfstatic/ext/metadata_keys.h"

namespace hfs {
namespace {

struct Entry {
  IOManagerFactory make;
  ContractValidator validate;
};

std::map<std::string, Entry>& registry() {
  static std::map<std::string, Entry> r;
  return r;
}

// The registry entry named by the program's `io.contract`, or the error saying why there is none.
Result<const Entry*> find_entry(const Program& program) {
  const Value* c = program.meta(keys::kContract);
  if (!c)
    return make_error(ErrorCode::kMissingMetadata, program.path() + ": no I/O contract metadata: key '" +
                                                       std::string(keys::kContract) +
                                                       "' is absent (was this program exported for an LLM runner?)");
  if (!c->is_string())
    return make_error(ErrorCode::kBadMetadata, program.path() + ": metadata '" + std::string(keys::kContract) +
                                                   "' must be a string, got " + c->to_json());
  auto it = registry().find(c->as_string());
  if (it == registry().end()) {
    std::string known;
    for (auto& n : registered_contracts()) known += (known.empty() ? "" : ", ") + n;
    return make_error(ErrorCode::kUnknownContract, program.path() + ": unknown I/O contract '" + c->as_string() +
                                                       "' (known: " + (known.empty() ? "none" : known) + ")");
  }
  return &it->second;
}

}  // namespace

bool register_io_manager(std::string contract, IOManagerFactory factory, ContractValidator validate) {
  registry()[std::move(contract)] = Entry{std::move(factory), std::move(validate)};
  return true;
}

std::vector<std::string> registered_contracts() {
  std::vector<std::string> out;
  for (auto& [name, f] : registry()) out.push_back(name);
  return out;
}

Result<std::unique_ptr<IOManager>> create_io_manager(std::shared_ptr<const Program> program,
                                                     const IOManagerOptions& options) {
  HFS_ASSIGN_OR_RETURN(const auto* entry, find_entry(*program));
  return entry->make(std::move(program), options);
}

Status validate_contract(const Program& program) {
  HFS_ASSIGN_OR_RETURN(const auto* entry, find_entry(program));
  return entry->validate ? entry->validate(program) : Status();
}

}  // namespace hfs
