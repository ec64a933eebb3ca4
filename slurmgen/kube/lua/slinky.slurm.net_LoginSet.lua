-- LoginSet: v1.2.1 writes status.replicas (its Deployment's status.replicas: pods created, ready
-- or not), selector and conditions, no observedGeneration (loginset_sync_status.go).
-- spec.replicas defaults to 1 (loginset_types.go).
local hs = conditions_health(obj)
if hs ~= nil and hs.status ~= "Healthy" then
  return hs
end
if obj.status == nil then
  return {status = "Progressing", message = "waiting for slurm-operator to report the LoginSet"}
end
local want = 1
if obj.spec ~= nil and obj.spec.replicas ~= nil then
  want = obj.spec.replicas
end
local have = obj.status.replicas or 0
if have < want then
  return {status = "Progressing", message = have .. " of " .. want .. " login pods created"}
end
return {status = "Healthy", message = have .. " of " .. want .. " login pods created"}
