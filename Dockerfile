# The agent connector service as a container image (docs/deploying.md). Two stages on the same base image:
# the first installs every dependency and builds dist/ (`npm run build`), the second holds only dist/, the
# production node_modules and package.json, and runs as a non-root user.
#
#   docker build -t agent-connector-service .
#   docker run -p 8080:8080 -v acs-data:/data -e PUBLIC_URL=https://connectors.example.com agent-connector-service
#
# BASE_IMAGE is any Debian-based image with Node.js 20.19 or later on its PATH (node and npm). The default is the
# official slim image; where no registry is reachable, build a base of your own and name it here
# (test/e2e/container.test.ts builds one with debootstrap and this machine's Node).
ARG BASE_IMAGE=node:20-bookworm-slim

FROM ${BASE_IMAGE} AS build
WORKDIR /app
# better-sqlite3 is a native addon: where no prebuilt binary can be fetched for the base's Node, npm compiles it,
# which needs python3, make and a C++ compiler (installed only in this stage, only when the base lacks them).
RUN if ! command -v python3 >/dev/null || ! command -v make >/dev/null || ! command -v g++ >/dev/null; then \
      apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends python3 make g++ \
      && rm -rf /var/lib/apt/lists/*; \
    fi
COPY package.json package-lock.json ./
RUN npm ci --no-audit --no-fund
COPY . .
RUN npm run build && npm prune --omit=dev --no-audit --no-fund

FROM ${BASE_IMAGE}
ENV NODE_ENV=production \
    HOST=0.0.0.0 \
    PORT=8080 \
    DATA_DIR=/data
WORKDIR /app
# A system user of its own (uid 10001), owning nothing but the data directory.
RUN groupadd --system --gid 10001 acs \
    && useradd --system --uid 10001 --gid 10001 --home-dir /nonexistent --no-create-home --shell /usr/sbin/nologin acs \
    && mkdir -p /data && chown acs:acs /data && chmod 700 /data
COPY --from=build /app/package.json ./package.json
COPY --from=build /app/node_modules ./node_modules
COPY --from=build /app/dist ./dist
USER 10001:10001
# The SQLite store, the encryption key file and the first-start secrets live here: mount a volume on it.
VOLUME ["/data"]
EXPOSE 8080
# /ready answers 200 once the service takes requests, 503 while it drains on SIGTERM.
HEALTHCHECK --interval=30s --timeout=5s --start-period=30s --retries=3 \
  CMD ["node", "-e", "fetch(`http://127.0.0.1:${process.env.PORT || 8080}/ready`).then((r) => process.exit(r.ok ? 0 : 1), () => process.exit(1))"]
STOPSIGNAL SIGTERM
# Exec form: node is PID 1 and receives SIGTERM itself (no shell in between), then drains and stops.
CMD ["node", "dist/runtime/main.js"]
