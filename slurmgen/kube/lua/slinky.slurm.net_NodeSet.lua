-- NodeSet: v1.2.1 writes observedGeneration, desired (spec.replicas, or the matching nodes in
-- DaemonSet mode), readyReplicas and the Slurm node counts (slurmDown, ...) on each reconcile
-- (nodeset_sync_status.go). Zero counts are omitted (omitempty).
-- Not waited for: updatedReplicas. A rolling update drains each Slurm node before replacing its
-- pod, which takes as long as its longest job; the sync would hold for it.
local hs = conditions_health(obj)
if hs ~= nil and hs.status ~= "Healthy" then
  return hs
end
if obj.status == nil then
  return {status = "Progressing", message = "waiting for slurm-operator to report the NodeSet"}
end
local s = obj.status
local generation = obj.metadata.generation or 0
local observed = s.observedGeneration or 0
if observed < generation then
  return {status = "Progressing", message = "slurm-operator has not yet seen generation " .. generation}
end
local want = s.desired or 0
local ready = s.readyReplicas or 0
local down = s.slurmDown or 0
if want > 0 and down >= want then
  return {status = "Degraded", message = "all " .. want .. " Slurm nodes are DOWN (scontrol show node: Reason)"}
end
if ready < want then
  return {status = "Progressing", message = ready .. " of " .. want .. " slurmd pods ready"}
end
return {status = "Healthy", message = ready .. " of " .. want .. " slurmd pods ready"}
