-- A CustomResourceDefinition is healthy once the API server serves it (Established), so the
-- custom resources of the next wave find their kind. Argo CD v3.5.1's own check calls a CRD whose
-- NamesAccepted is written but whose Established is not yet (the moment after it is created)
-- Degraded, which fails the root's sync wave and retries it with backoff; here that moment is
-- Progressing, as in later Argo CD releases. Degraded: names refused or a non-structural schema.
if obj.metadata.deletionTimestamp ~= nil then
  return {status = "Progressing", message = "being deleted"}
end
if obj.status == nil or obj.status.conditions == nil then
  return {status = "Progressing", message = "the API server has not reported on it yet"}
end
local established = false
for _, c in ipairs(obj.status.conditions) do
  if c.type == "NamesAccepted" and c.status == "False" then
    return {status = "Degraded", message = "names not accepted: " .. (c.message or "")}
  end
  if c.type == "NonStructuralSchema" and c.status == "True" then
    return {status = "Degraded", message = "non-structural schema: " .. (c.message or "")}
  end
  if c.type == "Established" and c.status == "True" then
    established = true
  end
end
if established then
  return {status = "Healthy", message = "established"}
end
return {status = "Progressing", message = "not established yet"}
