# Sourced by the GPU session scripts: run_part NAME COMMAND... runs a part with the time left before
# $deadline (seconds since the script's start), logs it to $work/logs/NAME.log and shows its end.
run_part() {
  local name=$1; shift
  local left=$(( deadline - SECONDS ))
  if (( left < 15 )); then echo "[skip] $name: no time left"; return; fi
  echo "[part] $name (at most ${left}s)"
  local start=$SECONDS
  PYTHONUNBUFFERED=1 timeout --signal=INT --kill-after=15 "$left" "$@" > "$work/logs/$name.log" 2>&1
  echo "[done] $name rc=$? in $(( SECONDS - start ))s"
  tail -n "${TAIL_LINES:-12}" "$work/logs/$name.log" | cut -c1-200
}
