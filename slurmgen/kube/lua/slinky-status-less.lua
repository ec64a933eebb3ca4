-- Controller, Accounting, RestApi: v1.2.1 gives them a status of conditions only and writes
-- none (controller_sync_status.go, accounting_sync_status.go, restapi_sync_status.go), so with
-- no conditions the object is reported Healthy, as Argo CD would without a check: returning
-- Progressing would hold every sync forever. Readiness of slurmctld / slurmdbd / slurmrestd is
-- their StatefulSet's or Deployment's, which Argo CD does not count (not in git).
local hs = conditions_health(obj)
if hs ~= nil then
  return hs
end
return {status = "Healthy", message = obj.kind .. ": slurm-operator reports no conditions; see its pods"}
