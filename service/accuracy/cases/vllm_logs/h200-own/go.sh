# last call: assemble the bundle, then start vLLM once per model with a shared deadline.
set -u
mkdir -p /root/parts /tmp/logs; cp .gpu/p3/* /root/parts/
[ -d /tmp/site/vllm ] || cat /root/parts/sitepart.0 /root/parts/sitepart.1 /root/parts/sitepart.2 | xz -d -T8 | tar -x -C /tmp || exit 3
grep -q "^    return False" /tmp/site/vllm/v1/sample/ops/topk_topp_sampler.py || sed -i "21a\\    return False" /tmp/site/vllm/v1/sample/ops/topk_topp_sampler.py; sed -n 20,23p /tmp/site/vllm/v1/sample/ops/topk_topp_sampler.py
export PYTHONPATH=/tmp/site HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 VLLM_NO_USAGE_STATS=1 DO_NOT_TRACK=1 VLLM_LOGGING_LEVEL=DEBUG PYTHONUNBUFFERED=1
source .gpu/runs.sh
T0=$(date +%s); DEADLINE=$((T0 + ${BUDGET:-470}))
left() { local l=$((DEADLINE - $(date +%s))); [ $l -gt $1 ] && echo $1 || echo $l; }
for spec in "llama-3.1-8b|llama-3.1-8b|{}|110" "qwen3-30b-a3b|qwen3-30b-a3b|{}|130" "deepseek-v2-lite|deepseek-v2-lite|{\"trust_remote_code\": false}|120" "gemma-3-27b-text|gemma-3-27b-text|{}|120" "qwen3-0.6b-warm|qwen3-0.6b|{}|80"; do
  IFS='|' read -r name model kw lim <<<"$spec"; l=$(left $lim); [ $l -lt 30 ] && { echo "skip $name"; continue; }
  run $name $model "$kw" $l
  grep -q "ENGINE STARTED" /tmp/logs/$name.log || { [ $name = qwen3-0.6b-cold ] && { tail -60 /tmp/logs/$name.log; break; }; }
done
ls -la ~/.cache/vllm 2>/dev/null | head
