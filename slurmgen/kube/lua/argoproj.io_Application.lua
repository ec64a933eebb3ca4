-- Argo CD's own snippet (docs/operator-manual/health.md @ v3.5.1): a child Application is healthy
-- only when its resources are, so the root's sync waves wait for it (removed from Argo CD in 1.8).
hs = {}
hs.status = "Progressing"
hs.message = ""
if obj.status ~= nil then
  if obj.status.health ~= nil then
    hs.status = obj.status.health.status
    if obj.status.health.message ~= nil then
      hs.message = obj.status.health.message
    end
  end
end
return hs
