# One image holding vck-controller and vck-fetch (deploy/ runs it; download and cleanup pods
# use it through --data-mover-image). Build: docker build -t ghcr.io/vck/vck:0.1.0 .
FROM debian:bookworm AS build
RUN apt-get update && apt-get install -y --no-install-recommends \
      g++ meson ninja-build pkg-config libboost1.81-dev libboost-json1.81-dev libboost-url1.81-dev \
      libssl-dev libyaml-cpp-dev libfmt-dev libpugixml-dev libcli11-dev libzstd-dev \
    && rm -rf /var/lib/apt/lists/*
WORKDIR /src
COPY . .
RUN meson setup /build --buildtype=release -Dtests=false -Dexamples=false -Dbench=false \
    && ninja -C /build bin/vck-controller bin/vck-fetch

FROM debian:bookworm-slim
RUN apt-get update && apt-get install -y --no-install-recommends \
      ca-certificates libboost-json1.81.0 libboost-url1.81.0 libssl3 libyaml-cpp0.7 libfmt9 libpugixml1v5 libzstd1 \
    && rm -rf /var/lib/apt/lists/*
COPY --from=build /build/bin/vck-controller /build/bin/vck-fetch /usr/local/bin/
USER 65532:65532
ENTRYPOINT ["/usr/local/bin/vck-controller"]
