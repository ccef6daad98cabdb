// The hub layer's pure parts: SHA-256 against FIPS 180-4's published digests, Hub names against the
// Hub's rules, and the cache paths against huggingface_hub's layout (a relative link into blobs/).
// Downloads themselves are tested end to end against a loopback Hub in tests/tools/test_hub.py.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "hfstatic/hub.h"
#include "hub/cache_layout.h"
#include "hub/sha256.h"

namespace hfs::hub {
namespace {

std::string sha(const std::string& s) {
  Sha256 h;
  h.update(s.data(), s.size());
  return h.hex_digest();
}

TEST(HubSha256, PublishedVectors) {
  EXPECT_EQ(sha(""), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  EXPECT_EQ(sha("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  EXPECT_EQ(sha("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq"),
            "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
  // One million 'a's fed in uneven pieces: the buffering across update() calls.
  Sha256 h;
  const std::string piece(997, 'a');
  size_t left = 1000000;
  while (left > 0) {
    const size_t n = std::min(left, piece.size());
    h.update(piece.data(), n);
    left -= n;
  }
  EXPECT_EQ(h.hex_digest(), "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
}

TEST(HubSha256, FileAndMissingFile) {
  const auto path = std::filesystem::temp_directory_path() / "hfs_hub_sha_test.bin";
  std::ofstream(path, std::ios::binary) << "abc";
  auto r = sha256_file(path.string());
  ASSERT_TRUE(r.ok()) << r.error().to_string();
  EXPECT_EQ(*r, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  std::filesystem::remove(path);
  auto missing = sha256_file(path.string());
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.error().code(), ErrorCode::kIo);
  EXPECT_NE(missing.error().message().find(path.string()), std::string::npos);
}

TEST(HubRepoRef, ParsesNamesAndRevisions) {
  auto a = parse_repo_ref("HuggingFaceTB/SmolLM2-135M-Instruct");
  ASSERT_TRUE(a.ok());
  EXPECT_EQ(a->repo_id, "HuggingFaceTB/SmolLM2-135M-Instruct");
  EXPECT_EQ(a->revision, "main");
  auto b = parse_repo_ref("org/name.v2@refs/pr/1");
  ASSERT_TRUE(b.ok());
  EXPECT_EQ(b->repo_id, "org/name.v2");
  EXPECT_EQ(b->revision, "refs/pr/1");
  for (const char* bad : {"name", "a/b/c", "/abs", "org/", "/name", "org/na me", "org/-x", "org/x.", "org/a--b", "org/a..b",
                          "org/x@", "org/x@../up", "org/x@/abs", "org/x@a/../b", "./x", "../x/y"}) {
    auto r = parse_repo_ref(bad);
    EXPECT_FALSE(r.ok()) << bad;
    if (!r.ok()) {
      EXPECT_EQ(r.error().code(), ErrorCode::kInvalidArgument);
      EXPECT_NE(r.error().message().find(bad), std::string::npos) << r.error().message();
    }
  }
  EXPECT_TRUE(looks_like_repo_ref("org/name"));
  EXPECT_FALSE(looks_like_repo_ref("build/model.hfs"));  // a missing program file, not a repository
}

TEST(HubCacheLayout, HuggingFaceHubPaths) {
  const auto dir = std::filesystem::temp_directory_path() / "hfs_hub_layout_test";
  std::filesystem::remove_all(dir);
  EXPECT_EQ(repo_cache_folder(dir.string(), "org/name"), (dir / "models--org--name").string());
  CacheLayout L(dir.string(), "org/name");
  const std::string commit(40, 'a');
  std::filesystem::create_directories(L.blob("e").parent_path());
  std::ofstream(L.blob("e")) << "x";
  ASSERT_TRUE(L.link_snapshot(commit, "sub/w.safetensors", "e").ok());
  const auto link = L.snapshot(commit) / "sub" / "w.safetensors";
  EXPECT_EQ(std::filesystem::read_symlink(link).string(), "../../../blobs/e");
  EXPECT_TRUE(std::filesystem::exists(link));
  EXPECT_FALSE(L.cached_commit("main").has_value());
  ASSERT_TRUE(L.write_ref("main", commit).ok());
  std::ifstream f(L.ref("main"));
  std::string text((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  EXPECT_EQ(text, commit);  // no newline, as huggingface_hub writes it
  EXPECT_EQ(L.cached_commit("main"), commit);
  EXPECT_EQ(L.cached_commit(commit), commit);  // a hash with a snapshot folder resolves to itself
  EXPECT_FALSE(is_commit_hash(std::string(40, 'A')));
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace hfs::hub
