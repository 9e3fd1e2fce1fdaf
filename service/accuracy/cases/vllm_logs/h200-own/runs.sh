# Each run: name, model dir, LLM kwargs (JSON), time limit in seconds.
# logs land in $OUT/<name>.log as soon as each run ends.
run() {
  local name=$1 model=$2 kw=$3 limit=$4
  echo "=== $name $(date +%T)"
  { echo "RUN $name model=$model kwargs=$kw"; nvidia-smi --query-gpu=name,memory.total,memory.used,driver_version --format=csv;
    timeout -s KILL $limit python3 .gpu/start.py .gpu/models/$model "$kw" 2>&1; echo "RC $?"; } > /tmp/logs/$name.log 2>&1
  grep -E "RC |took|KV cache|concurrency|Available|CUDA graph|profil|non-torch|peak|Traceback|Error" /tmp/logs/$name.log | tail -25
  cp /tmp/logs/$name.log $OUT/
  pkill -9 -f start.py; pkill -9 -f EngineCore; pkill -9 python3; for i in 1 2 3 4 5 6 7 8 9 10; do u=$(nvidia-smi --query-gpu=memory.used --format=csv,noheader,nounits); [ "$u" -lt 2000 ] && break; sleep 1; done; echo "used after $name: $u MiB"
}
