import { prom, type Registry } from "@tollgate/platform";

// Get-or-create, so several publishers or consumers can share one service registry.

export function counter(registry: Registry, name: string, help: string, labelNames: string[]) {
  return (
    (registry.getSingleMetric(name) as prom.Counter<string> | undefined) ??
    new prom.Counter({ name, help, labelNames, registers: [registry] })
  );
}

export function gauge(registry: Registry, name: string, help: string, labelNames: string[]) {
  return (
    (registry.getSingleMetric(name) as prom.Gauge<string> | undefined) ??
    new prom.Gauge({ name, help, labelNames, registers: [registry] })
  );
}
