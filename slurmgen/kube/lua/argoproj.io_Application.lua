-- A child Application is healthy when it is Synced and its resources are healthy, so the root's
-- sync waves wait for it (Argo CD removed its own check in 1.8). Argo CD's snippet
-- (docs/operator-manual/health.md @ v3.5.1) reads status.health alone, which is Healthy for a
-- child whose manifests could not be rendered (no resources, sync Unknown): the root then moves
-- on and applies custom resources whose CRDs that child holds (`make rehearse` saw it happen).
-- A child Argo CD cannot render is Degraded, not Progressing: the root's sync then fails and is
-- retried, saying why, where a held wave would wait without a word.
if obj.status == nil then
  return {status = "Progressing", message = ""}
end
if obj.status.conditions ~= nil then
  for _, c in ipairs(obj.status.conditions) do
    if c.type == "ComparisonError" or c.type == "InvalidSpecError" then
      return {status = "Degraded", message = c.message or c.type}
    end
  end
end
local sync = "Unknown"
if obj.status.sync ~= nil and obj.status.sync.status ~= nil then
  sync = obj.status.sync.status
end
if sync ~= "Synced" then
  return {status = "Progressing", message = "sync status is " .. sync}
end
hs = {status = "Progressing", message = ""}
if obj.status.health ~= nil then
  hs.status = obj.status.health.status
  if obj.status.health.message ~= nil then
    hs.message = obj.status.health.message
  end
end
return hs
