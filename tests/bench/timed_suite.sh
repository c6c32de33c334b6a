# Sourced by the timing benchmarks (false_alarms.sh, change_points.sh): write_timed_suite DIR PLUGIN
# writes DIR/timed.yaml (3 ops, 12 repeats: linear, matmul, patch_embed) and DIR/good.yaml (the
# faulty plugin with no fault, platform box).
write_timed_suite() {
  cat > "$1/timed.yaml" <<'YAML'
suite: timed
defaults: {golden: reference, warmup: 2, repeats: 12, inputs: {seed: 5}}
checks:
  - {id: linear, kind: op, op: linear, shape: [16, 512, 256]}
  - {id: matmul, kind: op, op: matmul, shape: [16, 512, 256]}
  - {id: patch_embed, kind: op, op: patch_embed, shape: [3, 56, 56, 64], attrs: {patch: 14}}
YAML
  printf 'platform: box\nbackend: {lib: %s, options: {fault: none}}\n' "$2" > "$1/good.yaml"
}
