-- Automations are core (DESIGN.md: like everything in the 1.0.0 release);
-- `automations` is no longer an opt-in module, so it leaves enabled_modules.
UPDATE companies SET enabled_modules = array_remove(enabled_modules, 'automations') WHERE 'automations' = ANY (enabled_modules);
