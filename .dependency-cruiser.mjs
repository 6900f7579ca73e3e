// The import graph's rules (`pnpm check:graph`, part of `pnpm check`): services stand side by side on
// libs/, never on each other nor on tools, deploy or tests; libs/ and tools/ stand on no service. Tests (test/**) and the local
// stack (deploy/**) may import any service: they start and drive them.
/** @type {import('dependency-cruiser').IConfiguration} */
export default {
  forbidden: [
    {
      name: "no-service-into-service",
      comment:
        "A service imports no other service, by relative path or by @tollgate/<service>: what two services share belongs in libs/, and what one asks of another goes over its gRPC contract (proto/).",
      severity: "error",
      from: { path: "^services/([^/]+)/" },
      to: { path: "^services/", pathNot: "^services/$1/" },
    },
    {
      name: "no-lib-into-service-or-tool",
      comment:
        "libs/ lies under the services and tools: a library that imported one would stack them again and drag a service's insides into every user of the library.",
      severity: "error",
      from: { path: "^libs/" },
      to: { path: "^(services|tools)/" },
    },
    {
      name: "no-service-into-tool-deploy-or-test",
      comment:
        "A service ships alone in its image: it cannot stand on the operator's tools, the local launcher or the tests.",
      severity: "error",
      from: { path: "^services/" },
      to: { path: "^(tools|deploy|test)/" },
    },
    {
      name: "no-lib-into-deploy-or-test",
      comment: "Libraries ship in every service's image; the local launcher and the tests stay out of them.",
      severity: "error",
      from: { path: "^libs/" },
      to: { path: "^(deploy|test)/" },
    },
    {
      name: "no-unresolvable",
      comment:
        "An import the resolver cannot follow (e.g. a service's package, which exports nothing) would escape every rule above; tsc refuses it too, but the graph must not pass over it silently.",
      severity: "error",
      from: {},
      to: { couldNotResolve: true },
    },
    {
      name: "no-tool-into-service",
      comment:
        "Tools (the operator CLI) reach services only over gRPC, so they work against a deployed mesh and a service's insides stay its own.",
      severity: "error",
      from: { path: "^tools/" },
      to: { path: "^services/" },
    },
    {
      name: "no-circular",
      comment:
        "A cycle makes modules that cannot be understood, tested or moved apart, and its import order decides what is undefined at load time. Type-only imports are erased before run time, so a cycle through one is not counted.",
      severity: "error",
      from: {},
      to: { circular: true, viaOnly: { dependencyTypesNot: ["type-only"] } },
    },
  ],
  options: {
    // npm packages are leaves here; workspace packages (@tollgate/*) resolve through their symlinks
    // to their real paths (services/…, libs/…), so the rules above see them as the folders they are.
    doNotFollow: { path: "node_modules" },
    // Bundles (`pnpm build`: services/<service>/dist) are built output, not sources.
    exclude: { path: ["node_modules", "/dist/"] },
    tsPreCompilationDeps: true,
    tsConfig: { fileName: "tsconfig.json" },
    enhancedResolveOptions: {
      exportsFields: ["exports"],
      conditionNames: ["import", "require", "node", "default", "types"],
      extensions: [".ts", ".js", ".mjs", ".cjs", ".json"],
    },
  },
};
