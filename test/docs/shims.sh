# Sourced before each shell example of the docs (test/docs/examples.test.ts), in the page's own
# folder where the page's server runs. The examples stay as a user types them; these functions
# only put the test's ports in place of the documented ones and keep servers in the background.
DOC_DIR="$PWD"

# Documented port → the port the test's server really listens on, one pair a line.
__doc_rewrite() {
  local a="$1" from to pid
  while read -r from to pid; do
    [ -n "$from" ] || continue
    a="${a//localhost:$from/localhost:$to}"
    a="${a//127.0.0.1:$from/127.0.0.1:$to}"
  done < "$DOC_DIR/.doc-ports"
  printf '%s' "$a"
}

curl() {
  local args=() a
  for a in "$@"; do args+=("$(__doc_rewrite "$a")"); done
  command curl "${args[@]}"
}

# `serve` with the example's flags, on free ports, in the background, logging to a file; its
# ports replace the documented ones for the rest of the page. A server already serving the same
# documented port is stopped first, as the reader stops it (Ctrl-C) before starting the new one.
# With no flags at all, the page's server (already started the same way by the test) is the one
# the example means.
__doc_serve() {
  [ "$#" -eq 0 ] && [ -z "${HTTPSKIT_PORT:-}${HTTPSKIT_HTTP_PORT:-}${HTTPSKIT_METRICS_PORT:-}" ] && return 0
  local args=() port="${HTTPSKIT_PORT:-8443}" http="${HTTPSKIT_HTTP_PORT:-}" metrics="${HTTPSKIT_METRICS_PORT:-}"
  while [ "$#" -gt 0 ]; do
    case "$1" in
      --port) port="$2"; shift 2 ;;
      --http-port) http="$2"; args+=(--http-port 0); shift 2 ;;
      --metrics-port) metrics="$2"; args+=(--metrics-port 0); shift 2 ;;
      *) args+=("$1"); shift ;;
    esac
  done
  local from to pid i
  while read -r from to pid; do
    [ "$from" = "$port" ] && [ -n "$pid" ] || continue
    kill -TERM "$pid" 2> /dev/null || true
    for i in $(seq 150); do kill -0 "$pid" 2> /dev/null || break; sleep 0.1; done
  done < "$DOC_DIR/.doc-ports"
  local n log
  n=$(wc -l < "$DOC_DIR/.doc-pids")
  log="$DOC_DIR/.doc-server-$n.log"
  HTTPSKIT_PORT=0 HTTPSKIT_HTTP_PORT= HTTPSKIT_METRICS_PORT= command node "$DOC_DIR/dist/bin/httpskit.js" serve "${args[@]}" > "$log" 2>&1 < /dev/null &
  local child=$!
  echo "$child" >> "$DOC_DIR/.doc-pids"
  local line
  for i in $(seq 300); do
    line=$(grep -m1 '"msg":"listening"' "$log" || true)
    [ -n "$line" ] && break
    kill -0 "$child" 2> /dev/null || { cat "$log" >&2; return 1; }
    sleep 0.1
  done
  [ -n "$line" ] || { echo "doc test: the server did not start" >&2; cat "$log" >&2; return 1; }
  local map
  map="$port $(printf '%s' "$line" | sed -n 's/.*"url":"https:[^"]*:\([0-9]*\)[^0-9].*/\1/p') $child"
  [ -n "$http" ] && map="$map
$http $(printf '%s' "$line" | sed -n 's/.*"httpUrl":"http:[^"]*:\([0-9]*\)[^0-9].*/\1/p')"
  [ -n "$metrics" ] && map="$map
$metrics $(printf '%s' "$line" | sed -n 's/.*"metricsUrl":"http:[^"]*:\([0-9]*\)[^0-9].*/\1/p')"
  local rest
  rest=$(while read -r from to pid; do printf '%s\n' "$map" | grep -q "^$from " || printf '%s %s %s\n' "$from" "$to" "$pid"; done < "$DOC_DIR/.doc-ports")
  printf '%s\n%s\n' "$map" "$rest" > "$DOC_DIR/.doc-ports"
}

httpskit() {
  local a
  for a in "$@"; do case "$a" in -h|--help|--version) command node "$DOC_DIR/dist/bin/httpskit.js" "$@"; return ;; esac; done
  case "${1:-serve}" in
    serve) [ "$#" -gt 0 ] && shift; __doc_serve "$@" ;;
    -*) __doc_serve "$@" ;;
    *) command node "$DOC_DIR/dist/bin/httpskit.js" "$@" ;;
  esac
}

node() {
  if [ "${1:-}" = dist/bin/httpskit.js ] || [ "${1:-}" = node_modules/httpskit/dist/bin/httpskit.js ]; then shift; httpskit "$@"; else command node "$@"; fi
}

npx() {
  local args=() a
  for a in "$@"; do case "$a" in --yes|-y) ;; *) args+=("$a") ;; esac; done
  if [ "${args[0]:-}" = httpskit ]; then httpskit "${args[@]:1}"; else echo "doc test: npx ${args[*]} is not one the docs may run" >&2; return 1; fi
}

npm() {
  case "${1:-}" in
    ci|install|i) echo "doc test: npm $* skipped, the packages are installed" >&2 ;;
    start) shift; [ "${1:-}" = -- ] && shift; __doc_serve "$@" ;;
    *) echo "doc test: npm $* is not run by the doc test; mark the block <!-- not run: why -->" >&2; return 1 ;;
  esac
}
