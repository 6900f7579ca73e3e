export * from "./admin.ts";
export * from "./mesh.ts";
export * from "./ports.ts";
export * from "./postgres.ts";
export * from "./servers.ts";
export * from "./services.ts";
