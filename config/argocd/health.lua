-- Argo CD health of a verda.linecorp.com object (VirtualMachine, VirtualMachineGroup,
-- LoadBalancer). Every kind reports the same conditions, so one check serves all:
--   Healthy     Ready=True for the current generation
--   Suspended   Paused=True (annotation verda.linecorp.com/reconcile-policy: skip)
--   Degraded    Stalled=True: only a change to the object can help (unknown image,
--               quota, an import that does not match, a group's rollout past its
--               progressDeadlineSeconds, more unhealthy replicas than maxUnhealthy, ...)
--   Progressing anything else: not observed yet, being created, scaled or deleted,
--               or waiting on the cloud (it retries by itself)
local hs = {}

local function condition(conditions, type)
  if conditions == nil then
    return nil
  end
  for _, c in ipairs(conditions) do
    if c.type == type then
      return c
    end
  end
  return nil
end

local function said(c)
  if c.message ~= nil and c.message ~= "" then
    return c.reason .. ": " .. c.message
  end
  return c.reason
end

if obj.metadata.deletionTimestamp ~= nil then
  hs.status = "Progressing"
  hs.message = "Being deleted: the operator removes its cloud resources first"
  return hs
end

local status = obj.status
if status == nil or status.observedGeneration == nil
    or status.observedGeneration ~= obj.metadata.generation then
  hs.status = "Progressing"
  hs.message = "Waiting for the operator to observe generation " .. tostring(obj.metadata.generation)
  return hs
end

local function holds(c)
  return c ~= nil and c.status == "True"
end

local function verdict(health, c)
  hs.status = health
  hs.message = said(c)
  return hs
end

local conditions = status.conditions
local paused = condition(conditions, "Paused")
if holds(paused) then
  return verdict("Suspended", paused)
end
local ready = condition(conditions, "Ready")
if holds(ready) then
  return verdict("Healthy", ready)
end
local stalled = condition(conditions, "Stalled")
if holds(stalled) then
  return verdict("Degraded", stalled)
end
if ready ~= nil then
  return verdict("Progressing", ready)
end
hs.status = "Progressing"
hs.message = "Waiting for the operator to report Ready"
return hs
