-- slinky.slurm.net (slurm-operator v1.2.1): status.conditions read as the Kubernetes API
-- conventions define them. v1.2.1 keeps the conditions it finds and sets none of its own, bar a
-- NodeSet's ReservationCreated (internal/controller/*/*_sync_status.go): these rules act only
-- on conditions a later operator (or a person) writes. nil: the conditions say nothing.
-- Argo CD runs this without the string and math libraries (util/lua/lua.go @ v3.5.1).
local function said(c)
  if c.message ~= nil and c.message ~= "" then
    return c.message
  end
  if c.reason ~= nil and c.reason ~= "" then
    return c.reason
  end
  return c.type .. " is " .. tostring(c.status)
end

local function conditions_health(obj)
  if obj.status == nil or obj.status.conditions == nil then
    return nil
  end
  for _, c in ipairs(obj.status.conditions) do
    if (c.type == "Degraded" or c.type == "Stalled") and c.status == "True" then
      return {status = "Degraded", message = said(c)}
    end
  end
  for _, c in ipairs(obj.status.conditions) do
    if c.type == "Ready" or c.type == "Available" then
      if c.status ~= "True" then
        return {status = "Progressing", message = said(c)}
      end
      local generation = obj.metadata.generation
      if generation ~= nil and c.observedGeneration ~= nil and c.observedGeneration < generation then
        return {status = "Progressing", message = c.type .. " is from generation " ..
          c.observedGeneration .. ", not yet " .. generation}
      end
      return {status = "Healthy", message = said(c)}
    end
  end
  return nil
end

