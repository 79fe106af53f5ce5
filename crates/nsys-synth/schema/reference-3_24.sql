-- A copy of the project's reference DDL (../shared/reference/nsys-ddl-reference.sql, beside
-- nsys-sqlite-schema.md there): nsys-synth's rows.rs makes from it the tables that no version file
-- here has. Statements end with a line ");".
-- =====================================================================================
-- Nsight Systems SQLite export: reference DDL for building schema-faithful test databases
-- =====================================================================================
-- Target: export schema 3.24.0 (nsys 2025.5.2); also matches 3.23.3 (nsys 2025.5.1) except where noted.
-- Companion document: nsys-sqlite-schema.md (same folder). Enum rows: nsys-enum-values.sql.
--
-- Provenance marker on each table:
--   "observed in a real export, schema X"  -> column list, order, types, NOT NULL and PK flags copied from
--                                             PRAGMA table_info of a real exported database of that schema.
--   "[doc 3.28.1]"                          -> taken from NVIDIA's schema reference for nsys 2026.4 (3.28.1);
--                                             columns that may not exist yet in 3.24 are flagged "UNCERTAIN".
-- Lines starting with "-- , col ..." inside a CREATE TABLE are columns added AFTER the target version;
-- uncomment them to emulate newer exports. Notes in [+x.y] give the schema version that introduced a column.
--
-- Exporter facts that fixtures should reproduce:
--   * No indexes and no foreign keys are declared (only the PRIMARY KEYs shown; composite PKs create
--     sqlite_autoindex_* entries).
--   * Tables are created lazily: a default export only contains tables that received rows
--     (plus META/ENUM/TARGET_INFO tables). A reader must treat any table as optional.
--   * Timestamps are INTEGER nanoseconds relative to the session start (see TARGET_INFO_SESSION_START_TIME).
--   * globalTid = (hwId << 56) | (vmId << 48) | (pid << 24) | tid ; globalPid = same with tid = 0.
--     Real exports usually have vmId = 1, i.e. globalTid >= 2^48.
--   * Row order is NOT guaranteed (explicitly so from nsys 2025.6); do not rely on rowid order.
-- =====================================================================================

-- -------------------------------------------------------------------------------------
-- A. Strings, processes, threads, session and export metadata
-- -------------------------------------------------------------------------------------

-- StringIds: observed in a real export, schema 3.24.0
CREATE TABLE StringIds (
    id                              INTEGER NOT NULL PRIMARY KEY,
    value                           TEXT NOT NULL
);

-- ThreadNames: observed in a real export, schema 3.24.0
CREATE TABLE ThreadNames (
    nameId                          INTEGER NOT NULL,               -- -> StringIds.id
    priority                        INTEGER,
    globalTid                       INTEGER                         -- packed
);

-- ProcessStreams: observed in a real export, schema 3.24.0
CREATE TABLE ProcessStreams (
    globalPid                       INTEGER NOT NULL,               -- packed global process id (TID bits zero)
    filenameId                      INTEGER NOT NULL,               -- -> StringIds.id
    contentId                       INTEGER NOT NULL                -- -> StringIds.id
);

-- PROCESSES: observed in a real export, schema 3.24.0
CREATE TABLE PROCESSES (
    globalPid                       INTEGER,                        -- packed global process id (TID bits zero)
    pid                             INTEGER,                        -- plain OS pid
    name                            TEXT                            -- process name
);

-- TARGET_INFO_SYSTEM_ENV: observed in a real export, schema 3.24.0
CREATE TABLE TARGET_INFO_SYSTEM_ENV (
    globalVid                       INTEGER,                        -- packed vm id
    devStateName                    TEXT NOT NULL,
    name                            TEXT NOT NULL,
    nameEnum                        INTEGER NOT NULL,               -- stable numeric key, e.g. 619 = Hostname
    value                           TEXT NOT NULL
);

-- TARGET_INFO_SESSION_START_TIME: observed in a real export, schema 3.24.0
CREATE TABLE TARGET_INFO_SESSION_START_TIME (
    utcEpochNs                      INTEGER,                        -- wall clock (UTC, ns since 1970) of session t=0
    utcTime                         TEXT,                           -- text form
    localTime                       TEXT                            -- text form, target local time
    -- , systemClockNs INTEGER   -- added in 3.24.14
    -- , sessionStartCntVctNs INTEGER   -- added in 3.28.1 (doc)
);

-- ANALYSIS_DETAILS: observed in a real export, schema 3.24.0
CREATE TABLE ANALYSIS_DETAILS (
    globalVid                       INTEGER NOT NULL,               -- packed vm id
    duration                        INTEGER NOT NULL,               -- ns, total span
    startTime                       INTEGER NOT NULL,               -- NOT the timestamp origin; see notes
    stopTime                        INTEGER NOT NULL                -- see notes
);

-- ANALYSIS_FILE: observed in a real export, schema 3.24.0
CREATE TABLE ANALYSIS_FILE (
    id                              INTEGER NOT NULL PRIMARY KEY,
    filename                        TEXT,
    contentId                       INTEGER,                        -- [3.16.x: replaced TEXT column content] -> StringIds.id
    globalPid                       INTEGER NOT NULL                -- packed global process id (TID bits zero)
);

-- META_DATA_CAPTURE: observed in a real export, schema 3.24.0
CREATE TABLE META_DATA_CAPTURE (
    name                            TEXT NOT NULL,
    value                           TEXT
);

-- META_DATA_EXPORT: observed in a real export, schema 3.24.0
CREATE TABLE META_DATA_EXPORT (
    name                            TEXT NOT NULL,
    value                           TEXT
);

-- DIAGNOSTIC_EVENT: observed in a real export, schema 3.24.0
CREATE TABLE DIAGNOSTIC_EVENT (
    timestamp                       INTEGER NOT NULL,
    timestampType                   INTEGER NOT NULL,               -- -> ENUM_DIAGNOSTIC_TIMESTAMP_SOURCE.id
    source                          INTEGER NOT NULL,               -- -> ENUM_DIAGNOSTIC_SOURCE_TYPE.id
    severity                        INTEGER NOT NULL,               -- -> ENUM_DIAGNOSTIC_SEVERITY_LEVEL.id
    text                            TEXT NOT NULL,
    globalPid                       INTEGER                         -- packed global process id (TID bits zero)
);

-- -------------------------------------------------------------------------------------
-- B. Devices, contexts, streams
-- -------------------------------------------------------------------------------------

-- TARGET_INFO_GPU: observed in a real export, schema 3.24.0
CREATE TABLE TARGET_INFO_GPU (
    vmId                            INTEGER NOT NULL,
    id                              INTEGER NOT NULL,               -- GPU id; = CUDA_DEVICE.gpuId = GPU metrics typeId & 0xFF
    name                            TEXT,
    busLocation                     TEXT,
    isDiscrete                      INTEGER,
    l2CacheSize                     INTEGER,
    totalMemory                     INTEGER,
    memoryBandwidth                 INTEGER,
    clockRate                       INTEGER,
    smCount                         INTEGER,
    pwGpuId                         INTEGER,
    uuid                            TEXT,
    luid                            INTEGER,
    chipName                        TEXT,
    cuDevice                        INTEGER,                        -- CUDA device id as enumerated by nsys on the target [U: not the per-process ordinal]
    ctxswDevPath                    TEXT,
    ctrlDevPath                     TEXT,
    revision                        INTEGER,
    nodeMask                        INTEGER,
    constantMemory                  INTEGER,
    maxIPC                          INTEGER,
    maxRegistersPerBlock            INTEGER,
    maxShmemPerBlock                INTEGER,
    maxShmemPerBlockOptin           INTEGER,
    maxShmemPerSm                   INTEGER,
    maxRegistersPerSm               INTEGER,
    threadsPerWarp                  INTEGER,
    asyncEngines                    INTEGER,
    maxWarpsPerSm                   INTEGER,
    maxBlocksPerSm                  INTEGER,
    maxThreadsPerBlock              INTEGER,
    maxBlockDimX                    INTEGER,
    maxBlockDimY                    INTEGER,
    maxBlockDimZ                    INTEGER,
    maxGridDimX                     INTEGER,
    maxGridDimY                     INTEGER,
    maxGridDimZ                     INTEGER,
    computeMajor                    INTEGER,
    computeMinor                    INTEGER,
    smMajor                         INTEGER,
    smMinor                         INTEGER
    -- , numaNodeId INTEGER   -- added in 3.28.1 (doc)
);

-- TARGET_INFO_CUDA_DEVICE: observed in a real export, schema 3.24.0
CREATE TABLE TARGET_INFO_CUDA_DEVICE (
    gpuId                           INTEGER,                        -- -> TARGET_INFO_GPU.id
    cudaId                          INTEGER NOT NULL,               -- per-process CUDA ordinal (= kernel.deviceId)
    pid                             INTEGER NOT NULL                -- plain OS pid
    -- , uuid TEXT   -- added in 3.24.14
    -- , numMultiprocessors INTEGER   -- added in 3.24.14
);

-- TARGET_INFO_CUDA_CONTEXT_INFO: observed in a real export, schema 3.24.0
CREATE TABLE TARGET_INFO_CUDA_CONTEXT_INFO (
    nullStreamId                    INTEGER NOT NULL,               -- stream id of the NULL stream
    hwId                            INTEGER NOT NULL,
    vmId                            INTEGER NOT NULL,
    processId                       INTEGER NOT NULL,               -- plain OS pid
    deviceId                        INTEGER NOT NULL,               -- per-process CUDA ordinal
    contextId                       INTEGER NOT NULL,
    parentContextId                 INTEGER,
    isGreenContext                  INTEGER
    -- , numMultiprocessors INTEGER   -- added in 3.24.14
    -- , numTpcs INTEGER   -- added in 3.24.18
    -- , tpcMask TEXT   -- added in 3.24.18
    -- , workqueueResourceId INTEGER   -- added in 3.24.18
    -- , workqueueConcurrencyLimit INTEGER   -- added in 3.24.18
    -- , workqueueSharingScope INTEGER   -- added in 3.24.18
    -- , workqueueChannelCount INTEGER   -- added in 3.28.1 (doc)
    -- , workqueueChannelIds TEXT   -- added in 3.28.1 (doc)
);

-- TARGET_INFO_CUDA_STREAM: observed in a real export, schema 3.24.0
CREATE TABLE TARGET_INFO_CUDA_STREAM (
    streamId                        INTEGER NOT NULL,
    hwId                            INTEGER NOT NULL,
    vmId                            INTEGER NOT NULL,
    processId                       INTEGER NOT NULL,               -- plain OS pid
    contextId                       INTEGER NOT NULL,
    priority                        INTEGER NOT NULL,
    flag                            INTEGER NOT NULL                -- -> ENUM_CUPTI_STREAM_TYPE.id
);

-- TARGET_INFO_NVTX_CUDA_DEVICE / _CONTEXT / _STREAM: observed in a real export, schema 3.0.0; unchanged in [doc 3.28.1].
-- Names given to CUDA objects with nvtxNameCuDevice/Context/Stream.
CREATE TABLE TARGET_INFO_NVTX_CUDA_DEVICE (
    name                            TEXT NOT NULL,
    hwId                            INTEGER NOT NULL,
    vmId                            INTEGER NOT NULL,
    deviceId                        INTEGER NOT NULL
);
CREATE TABLE TARGET_INFO_NVTX_CUDA_CONTEXT (
    name                            TEXT NOT NULL,
    hwId                            INTEGER NOT NULL,
    vmId                            INTEGER NOT NULL,
    processId                       INTEGER NOT NULL,
    deviceId                        INTEGER NOT NULL,
    contextId                       INTEGER NOT NULL
);
CREATE TABLE TARGET_INFO_NVTX_CUDA_STREAM (
    name                            TEXT NOT NULL,
    hwId                            INTEGER NOT NULL,
    vmId                            INTEGER NOT NULL,
    processId                       INTEGER NOT NULL,
    deviceId                        INTEGER NOT NULL,
    contextId                       INTEGER NOT NULL,
    streamId                        INTEGER NOT NULL
);

-- -------------------------------------------------------------------------------------
-- C. CUDA API and GPU activity
-- -------------------------------------------------------------------------------------

-- CUPTI_ACTIVITY_KIND_RUNTIME: observed in a real export, schema 3.24.0
CREATE TABLE CUPTI_ACTIVITY_KIND_RUNTIME (
    start                           INTEGER NOT NULL,               -- ns since session start
    end                             INTEGER NOT NULL,               -- ns since session start
    eventClass                      INTEGER NOT NULL,               -- 0 = CUDA runtime, 1 = CUDA driver (-> ENUM_NSYS_EVENT_CLASS)
    globalTid                       INTEGER,                        -- packed global thread id (see header)
    correlationId                   INTEGER,                        -- CUPTI correlation id (unique per process)
    nameId                          INTEGER NOT NULL,               -- -> StringIds.id, e.g. cudaLaunchKernel_v7000
    returnValue                     INTEGER NOT NULL,               -- CUDA error code
    callchainId                     INTEGER                         -- -> *_CALLCHAINS.id
);

-- CUPTI_ACTIVITY_KIND_KERNEL: observed in a real export, schema 3.24.0
CREATE TABLE CUPTI_ACTIVITY_KIND_KERNEL (
    start                           INTEGER NOT NULL,               -- ns since session start
    end                             INTEGER NOT NULL,               -- ns since session start
    deviceId                        INTEGER NOT NULL,               -- CUDA device ordinal as seen by the process
    contextId                       INTEGER NOT NULL,
    greenContextId                  INTEGER,                        -- [+3.7.2] NULL/0 when not a green context
    streamId                        INTEGER NOT NULL,
    correlationId                   INTEGER,                        -- CUPTI correlation id (unique per process)
    globalPid                       INTEGER,                        -- packed global process id (TID bits zero)
    demangledName                   INTEGER NOT NULL,               -- -> StringIds.id (full demangled name)
    shortName                       INTEGER NOT NULL,               -- -> StringIds.id (base name)
    mangledName                     INTEGER,                        -- -> StringIds.id (may be NULL)
    launchType                      INTEGER,                        -- -> ENUM_CUDA_KERNEL_LAUNCH_TYPE.id
    cacheConfig                     INTEGER,                        -- -> ENUM_CUDA_FUNC_CACHE_CONFIG.id
    registersPerThread              INTEGER NOT NULL,
    gridX                           INTEGER NOT NULL,
    gridY                           INTEGER NOT NULL,
    gridZ                           INTEGER NOT NULL,
    blockX                          INTEGER NOT NULL,
    blockY                          INTEGER NOT NULL,
    blockZ                          INTEGER NOT NULL,
    staticSharedMemory              INTEGER NOT NULL,
    dynamicSharedMemory             INTEGER NOT NULL,
    localMemoryPerThread            INTEGER NOT NULL,
    localMemoryTotal                INTEGER NOT NULL,
    gridId                          INTEGER NOT NULL,
    sharedMemoryExecuted            INTEGER,
    graphNodeId                     INTEGER,                        -- -> CUDA_GRAPH_NODE_EVENTS.graphNodeId (node-level graph trace)
    sharedMemoryLimitConfig         INTEGER,                        -- -> ENUM_CUDA_SHARED_MEM_LIMIT_CONFIG.id
    qmdBulkReleaseDone              INTEGER,                        -- [+3.23.x]
    qmdPreexitDone                  INTEGER,                        -- [+3.23.x]
    qmdLastCtaDone                  INTEGER,                        -- [+3.23.x]
    graphId                         INTEGER,                        -- [+3.23.x]
    clusterX                        INTEGER,                        -- [+3.23.x]
    clusterY                        INTEGER,                        -- [+3.23.x]
    clusterZ                        INTEGER,                        -- [+3.23.x]
    clusterSchedulingPolicy         INTEGER,                        -- [+3.23.x]
    maxPotentialClusterSize         INTEGER,                        -- [+3.23.x]
    maxActiveClusters               INTEGER                         -- [+3.23.x]
    -- , sharedMemoryRequestedPercentage INTEGER   -- added in 3.24.14 (2026.1.1)
    -- , tensorSizeMinusOneElements TEXT NOT NULL   -- added in 3.24.18 (2026.1.3); NOT NULL
);

-- CUPTI_ACTIVITY_KIND_MEMCPY: observed in a real export, schema 3.24.0
CREATE TABLE CUPTI_ACTIVITY_KIND_MEMCPY (
    start                           INTEGER NOT NULL,               -- ns since session start
    end                             INTEGER NOT NULL,               -- ns since session start
    deviceId                        INTEGER NOT NULL,
    contextId                       INTEGER NOT NULL,
    greenContextId                  INTEGER,                        -- [+3.7.2] NULL/0 when not a green context
    streamId                        INTEGER NOT NULL,
    correlationId                   INTEGER,                        -- CUPTI correlation id (unique per process)
    globalPid                       INTEGER,                        -- packed global process id (TID bits zero)
    bytes                           INTEGER NOT NULL,               -- bytes transferred
    copyKind                        INTEGER NOT NULL,               -- -> ENUM_CUDA_MEMCPY_OPER.id
    deprecatedSrcId                 INTEGER,                        -- legacy; prefer srcDeviceId
    srcKind                         INTEGER,                        -- -> ENUM_CUDA_MEM_KIND.id
    dstKind                         INTEGER,                        -- -> ENUM_CUDA_MEM_KIND.id
    srcDeviceId                     INTEGER,
    srcContextId                    INTEGER,
    dstDeviceId                     INTEGER,
    dstContextId                    INTEGER,
    migrationCause                  INTEGER,                        -- -> ENUM_CUDA_UNIF_MEM_MIGRATION.id
    graphNodeId                     INTEGER,                        -- -> CUDA_GRAPH_NODE_EVENTS.graphNodeId
    virtualAddress                  INTEGER,
    copyCount                       INTEGER                         -- [+3.17.x] batched memcpy count
);

-- CUPTI_ACTIVITY_KIND_MEMSET: observed in a real export, schema 3.23.3 (newest sample <= 3.24.0)
CREATE TABLE CUPTI_ACTIVITY_KIND_MEMSET (
    start                           INTEGER NOT NULL,               -- ns since session start
    end                             INTEGER NOT NULL,               -- ns since session start
    deviceId                        INTEGER NOT NULL,
    contextId                       INTEGER NOT NULL,
    greenContextId                  INTEGER,                        -- [+3.7.2] NULL/0 when not a green context
    streamId                        INTEGER NOT NULL,
    correlationId                   INTEGER,                        -- CUPTI correlation id (unique per process)
    globalPid                       INTEGER,                        -- packed global process id (TID bits zero)
    value                           INTEGER NOT NULL,               -- byte value written
    bytes                           INTEGER NOT NULL,
    graphNodeId                     INTEGER,                        -- -> CUDA_GRAPH_NODE_EVENTS.graphNodeId
    memKind                         INTEGER                         -- -> ENUM_CUDA_MEM_KIND.id
);

-- CUPTI_ACTIVITY_KIND_SYNCHRONIZATION: observed in a real export, schema 3.24.0
CREATE TABLE CUPTI_ACTIVITY_KIND_SYNCHRONIZATION (
    start                           INTEGER NOT NULL,               -- ns since session start
    end                             INTEGER NOT NULL,               -- ns since session start
    deviceId                        INTEGER NOT NULL,
    contextId                       INTEGER NOT NULL,
    greenContextId                  INTEGER,                        -- [+3.7.2] NULL/0 when not a green context
    streamId                        INTEGER NOT NULL,
    correlationId                   INTEGER,                        -- CUPTI correlation id (unique per process)
    globalPid                       INTEGER,                        -- packed global process id (TID bits zero)
    deprecatedSyncType              INTEGER,                        -- [+3.17.x] legacy encoding
    syncType                        INTEGER NOT NULL,               -- -> ENUM_CUPTI_SYNC_TYPE.id
    eventId                         INTEGER NOT NULL,               -- CUDA event id (0 if n/a)
    eventSyncId                     INTEGER                         -- [+3.17.x]
);

-- CUPTI_ACTIVITY_KIND_CUDA_EVENT: observed in a real export, schema 3.23.3 (newest sample <= 3.24.0)
CREATE TABLE CUPTI_ACTIVITY_KIND_CUDA_EVENT (
    timestamp                       INTEGER,                        -- [+3.23.x] device completion ts, 0 if not collected
    deviceId                        INTEGER NOT NULL,
    contextId                       INTEGER NOT NULL,
    greenContextId                  INTEGER,                        -- [+3.7.2] NULL/0 when not a green context
    streamId                        INTEGER NOT NULL,
    correlationId                   INTEGER,                        -- CUPTI correlation id (unique per process)
    globalPid                       INTEGER,                        -- packed global process id (TID bits zero)
    eventId                         INTEGER NOT NULL,
    eventSyncId                     INTEGER                         -- [+3.23.x]
);

-- CUPTI_ACTIVITY_KIND_OVERHEAD: observed in a real export, schema 3.24.0
CREATE TABLE CUPTI_ACTIVITY_KIND_OVERHEAD (
    start                           INTEGER NOT NULL,               -- ns since session start
    end                             INTEGER NOT NULL,               -- ns since session start
    eventClass                      INTEGER NOT NULL,               -- -> ENUM_NSYS_EVENT_CLASS.id
    globalTid                       INTEGER,                        -- packed global thread id (see header)
    correlationId                   INTEGER,                        -- CUPTI correlation id (unique per process)
    nameId                          INTEGER,                        -- -> StringIds.id
    overheadType                    INTEGER NOT NULL                -- -> ENUM_CUPTI_OVERHEAD_TYPE.id
);

-- PROFILER_OVERHEAD: observed in a real export, schema 3.24.0
CREATE TABLE PROFILER_OVERHEAD (
    start                           INTEGER NOT NULL,               -- ns since session start
    end                             INTEGER NOT NULL,               -- ns since session start
    globalTid                       INTEGER,                        -- packed global thread id (see header)
    nameId                          INTEGER NOT NULL,               -- -> StringIds.id
    overheadType                    INTEGER NOT NULL                -- [3.24.0: replaced returnValue] -> ENUM_CUPTI_OVERHEAD_TYPE.id
);

-- CUPTI_ACTIVITY_KIND_GRAPH_TRACE: [doc 3.28.1]. One row per whole-graph execution when graphs are traced at
-- graph granularity (--cuda-graph-trace=graph, the default). Not observed in a real sample.
CREATE TABLE CUPTI_ACTIVITY_KIND_GRAPH_TRACE (
    start                           INTEGER NOT NULL,
    end                             INTEGER NOT NULL,
    deviceId                        INTEGER NOT NULL,
    contextId                       INTEGER NOT NULL,
    greenContextId                  INTEGER,
    streamId                        INTEGER NOT NULL,
    correlationId                   INTEGER,                        -- -> RUNTIME.correlationId (cudaGraphLaunch)
    globalPid                       INTEGER,
    graphId                         INTEGER NOT NULL,               -- -> CUDA_GRAPH_EVENTS.graphId
    graphExecId                     INTEGER NOT NULL                -- -> CUDA_GRAPH_EVENTS.graphExecId
);

-- CUDA_GRAPH_NODE_EVENTS / CUDA_GRAPH_EVENTS: [doc 3.28.1]. CPU-side graph construction events.
-- UNCERTAIN version history: in schema 2.9.1 and 3.0.0 there is a single table named CUDA_GRAPH_EVENTS with the
-- node columns (see section J). The split into two tables happened somewhere between 3.0.0 and 3.28.1.
CREATE TABLE CUDA_GRAPH_NODE_EVENTS (
    start                           INTEGER NOT NULL,
    end                             INTEGER NOT NULL,
    eventClass                      INTEGER NOT NULL,               -- 77 = CUDA graph node creation
    globalTid                       INTEGER,
    nameId                          INTEGER NOT NULL,               -- -> StringIds.id (API that created the node)
    graphNodeId                     INTEGER NOT NULL,
    originalGraphNodeId             INTEGER                         -- set when the node is a clone
);
CREATE TABLE CUDA_GRAPH_EVENTS (
    start                           INTEGER NOT NULL,
    end                             INTEGER NOT NULL,
    eventClass                      INTEGER NOT NULL,               -- 94 exec creation, 95 graph creation, 96 clone
    globalTid                       INTEGER,
    nameId                          INTEGER NOT NULL,               -- -> StringIds.id
    graphId                         INTEGER,
    originalGraphId                 INTEGER,
    graphExecId                     INTEGER
);

-- CUDA_CALLCHAINS: observed in a real export, schema 3.0.0; identical in [doc 3.28.1].
CREATE TABLE CUDA_CALLCHAINS (
    id                              INTEGER NOT NULL,               -- <- RUNTIME.callchainId
    symbol                          INTEGER NOT NULL,               -- -> StringIds.id
    module                          INTEGER NOT NULL,               -- -> StringIds.id
    unresolved                      INTEGER,
    originalIP                      INTEGER,
    stackDepth                      INTEGER NOT NULL,               -- 0 = innermost frame
    PRIMARY KEY (id, stackDepth)
);

-- CUDA_GPU_MEMORY_USAGE_EVENTS: observed in a real export, schema 3.0.0 (+ streamId per [doc 3.28.1]).
CREATE TABLE CUDA_GPU_MEMORY_USAGE_EVENTS (
    start                           INTEGER NOT NULL,
    globalPid                       INTEGER NOT NULL,
    deviceId                        INTEGER NOT NULL,
    contextId                       INTEGER NOT NULL,
    address                         INTEGER NOT NULL,
    pc                              INTEGER NOT NULL,
    bytes                           INTEGER NOT NULL,
    memKind                         INTEGER NOT NULL,               -- -> ENUM_CUDA_MEM_KIND.id
    memoryOperationType             INTEGER NOT NULL,               -- -> ENUM_CUDA_DEV_MEM_EVENT_OPER.id (0 alloc, 1 free)
    name                            TEXT,
    correlationId                   INTEGER,
    streamId                        INTEGER,                        -- UNCERTAIN: absent in 3.0.0, present in doc 3.28.1
    localMemoryPoolAddress          INTEGER,                        -- [+3.0.0]
    localMemoryPoolReleaseThreshold INTEGER,
    localMemoryPoolSize             INTEGER,
    localMemoryPoolUtilizedSize     INTEGER,
    importedMemoryPoolAddress       INTEGER,
    importedMemoryPoolProcessId     INTEGER
);

-- CUDA_GPU_MEMORY_POOL_EVENTS: observed in a real export, schema 3.0.0; identical in [doc 3.28.1].
CREATE TABLE CUDA_GPU_MEMORY_POOL_EVENTS (
    start                           INTEGER NOT NULL,
    globalPid                       INTEGER NOT NULL,
    deviceId                        INTEGER NOT NULL,
    address                         INTEGER NOT NULL,
    operationType                   INTEGER NOT NULL,               -- -> ENUM_CUDA_MEMPOOL_OPER.id
    poolType                        INTEGER NOT NULL,               -- -> ENUM_CUDA_MEMPOOL_TYPE.id
    correlationId                   INTEGER,
    minBytesToKeep                  INTEGER,
    localMemoryPoolReleaseThreshold INTEGER,
    localMemoryPoolSize             INTEGER,
    localMemoryPoolUtilizedSize     INTEGER
);

-- CUDA_UM_CPU_PAGE_FAULT_EVENTS / CUDA_UM_GPU_PAGE_FAULT_EVENTS: observed in a real export, schema 3.0.0.
CREATE TABLE CUDA_UM_CPU_PAGE_FAULT_EVENTS (
    start                           INTEGER NOT NULL,
    globalPid                       INTEGER NOT NULL,
    address                         INTEGER NOT NULL,
    originalFaultPc                 INTEGER,
    CpuInstruction                  INTEGER NOT NULL,               -- -> StringIds.id
    module                          INTEGER NOT NULL,               -- -> StringIds.id
    unresolvedFaultPc               INTEGER,
    sourceFile                      INTEGER,                        -- UNCERTAIN: in doc 3.28.1, absent in 3.0.0
    sourceLine                      INTEGER                         -- UNCERTAIN: in doc 3.28.1, absent in 3.0.0
);
CREATE TABLE CUDA_UM_GPU_PAGE_FAULT_EVENTS (
    start                           INTEGER NOT NULL,
    end                             INTEGER NOT NULL,
    globalPid                       INTEGER NOT NULL,
    deviceId                        INTEGER NOT NULL,
    address                         INTEGER NOT NULL,
    numberOfPageFaults              INTEGER NOT NULL,
    faultAccessType                 INTEGER NOT NULL                -- -> ENUM_CUDA_UNIF_MEM_ACCESS_TYPE.id
);

-- CUDNN_EVENTS / CUBLAS_EVENTS: observed in a real export, schema 3.0.0; identical in [doc 3.28.1].
CREATE TABLE CUDNN_EVENTS (
    start                           INTEGER NOT NULL,
    end                             INTEGER NOT NULL,
    eventClass                      INTEGER NOT NULL,               -- 28 = cuDNN
    globalTid                       INTEGER,
    nameId                          INTEGER NOT NULL
);
CREATE TABLE CUBLAS_EVENTS (
    start                           INTEGER NOT NULL,
    end                             INTEGER NOT NULL,
    eventClass                      INTEGER NOT NULL,               -- 29 = cuBLAS
    globalTid                       INTEGER,
    nameId                          INTEGER NOT NULL
);

-- -------------------------------------------------------------------------------------
-- D. NVTX
-- -------------------------------------------------------------------------------------

-- NVTX_EVENTS: observed in a real export, schema 3.20.3 (newest sample <= 3.24.0)
CREATE TABLE NVTX_EVENTS (
    start                           INTEGER NOT NULL,               -- ns since session start
    end                             INTEGER,                        -- ns since session start
    eventType                       INTEGER NOT NULL,               -- -> ENUM_NSYS_EVENT_TYPE.id (34 mark, 59 push/pop, 60 start/end, 75 domain create, ...)
    rangeId                         INTEGER,                        -- start/end range correlation id
    category                        INTEGER,                        -- user category id; NULL when not set
    color                           INTEGER,                        -- ARGB packed into an integer; NULL when not set
    text                            TEXT,                           -- inline (non-registered) string
    globalTid                       INTEGER,                        -- packed global thread id (see header)
    endGlobalTid                    INTEGER,                        -- thread that ended a start/end range; often NULL
    textId                          INTEGER,                        -- -> StringIds.id (registered string)
    domainId                        INTEGER,                        -- 0 = default domain; unique only within a process
    uint64Value                     INTEGER,
    int64Value                      INTEGER,
    doubleValue                     REAL,
    uint32Value                     INTEGER,
    int32Value                      INTEGER,
    floatValue                      REAL,
    jsonTextId                      INTEGER,                        -- -> StringIds.id
    jsonText                        TEXT,                           -- extended payload as JSON (export with --include-json)
    binaryData                      TEXT                            -- [first seen 3.20.3; added after 3.0.0] raw extended payload
    -- , eventId INTEGER NOT NULL   -- added in 3.28.1 doc: INTEGER NOT NULL PRIMARY KEY; absent in 3.20.3; first version unknown
);

-- NVTX extended-payload schema tables ([doc 3.28.1]; introduction version unknown, not observed in samples):
-- NVTX_PAYLOAD_SCHEMAS(domainId, schemaId, name, type, flags, numEntries, payloadSize, alignTo)
-- NVTX_PAYLOAD_SCHEMA_ENTRIES(domainId NN, schemaId NN, idx NN, flags, type, name, description, arrayOrUnionDetail, offset)
-- NVTX_PAYLOAD_ENUMS(domainId, schemaId, name, numEntries, size)
-- NVTX_PAYLOAD_ENUM_ENTRIES(domainId NN, schemaId NN, idx NN, name, value, isFlag)
-- NVTX_SCOPES(domainId, scopeId, parentScopeId, path)
-- Only with `nsys export --dynamic-tables=all` (2026.x): NVTX_EVENTS_PAYLOAD_SCHEMAS(eventId, globalPid, domainId,
-- payloadSchemaID), NVTX_EXPORT_TRANSLATION, NVTX_PAYLOAD_SCHEMA_RELATIONS and one table per payload schema named
-- DYNAMIC_NVTXPAYLOAD_DATATYPE_<globalPid>_<domainId>_<schemaId>.

-- -------------------------------------------------------------------------------------
-- E. MPI (nsys --trace=mpi).  All tables [doc 3.28.1]; none observed in a real sample.
--    UNCERTAIN: first schema version with these tables (after 3.0.0 / 2022.4, which still reported MPI as an
--    NVTX domain named "MPI"); commUid columns may be newer than 3.24.
-- -------------------------------------------------------------------------------------
CREATE TABLE MPI_RANKS (
    globalTid                       INTEGER NOT NULL,               -- thread that called MPI_Init
    rank                            INTEGER NOT NULL                -- rank in MPI_COMM_WORLD
);
CREATE TABLE MPI_P2P_EVENTS (
    start                           INTEGER NOT NULL,
    end                             INTEGER,
    globalTid                       INTEGER,
    textId                          INTEGER,                        -- -> StringIds.id, e.g. 'MPI_Send', 'MPI_Isend'
    commHandle                      INTEGER,
    commUid                         INTEGER,                        -- UNCERTAIN (present in doc 3.28.1)
    tag                             INTEGER,
    remoteRank                      INTEGER,                        -- peer rank (dest or source)
    size                            INTEGER,                        -- bytes
    requestHandle                   INTEGER                         -- non-blocking calls
);
CREATE TABLE MPI_COLLECTIVES_EVENTS (
    start                           INTEGER NOT NULL,
    end                             INTEGER,
    globalTid                       INTEGER,
    textId                          INTEGER,                        -- -> StringIds.id, e.g. 'MPI_Allreduce'
    commHandle                      INTEGER,
    commUid                         INTEGER,                        -- UNCERTAIN (present in doc 3.28.1)
    rootRank                        INTEGER,
    size                            INTEGER,                        -- send bytes
    recvSize                        INTEGER,                        -- receive bytes
    requestHandle                   INTEGER
);
CREATE TABLE MPI_START_WAIT_EVENTS (
    start                           INTEGER NOT NULL,
    end                             INTEGER,
    globalTid                       INTEGER,
    textId                          INTEGER,                        -- MPI_Wait*, MPI_Test*, MPI_Start*
    requestHandle                   INTEGER                         -- one row per request for *all/*some variants
);
CREATE TABLE MPI_OTHER_EVENTS (
    start                           INTEGER NOT NULL,
    end                             INTEGER,
    globalTid                       INTEGER,
    textId                          INTEGER                         -- MPI_Init, MPI_Finalize, MPI_Comm_*, ...
);
CREATE TABLE MPI_COMMUNICATORS (
    rank                            INTEGER,
    timestamp                       INTEGER,
    commHandle                      INTEGER,
    parentHandle                    INTEGER,
    localRank                       INTEGER,
    size                            INTEGER,
    groupRoot                       INTEGER,
    groupRootUid                    INTEGER,
    members                         TEXT,
    commUid                         INTEGER                         -- UNCERTAIN (present in doc 3.28.1)
);

-- -------------------------------------------------------------------------------------
-- F. OpenACC (CUPTI) and OpenMP (OMPT)
-- -------------------------------------------------------------------------------------
-- OpenACC: observed in a real export, schema 3.0.0. [doc 3.28.1] adds correlationId after funcName (UNCERTAIN
-- whether 3.24 has it). Common columns first, then the per-table extras.
CREATE TABLE CUPTI_ACTIVITY_KIND_OPENACC_DATA (
    start                           INTEGER NOT NULL,
    end                             INTEGER NOT NULL,
    nameId                          INTEGER NOT NULL,               -- -> StringIds.id (event name)
    globalTid                       INTEGER,
    eventKind                       INTEGER NOT NULL,               -- -> ENUM_OPENACC_EVENT_KIND.id
    DeviceType                      INTEGER NOT NULL,               -- -> ENUM_OPENACC_DEVICE.id (capital D is real)
    lineNo                          INTEGER NOT NULL,
    cuDeviceId                      INTEGER NOT NULL,
    cuContextId                     INTEGER NOT NULL,
    cuStreamId                      INTEGER NOT NULL,
    srcFile                         INTEGER,                        -- -> StringIds.id
    funcName                        INTEGER,                        -- -> StringIds.id
    correlationId                   INTEGER,                        -- UNCERTAIN (doc 3.28.1 only)
    bytes                           INTEGER,
    varName                         INTEGER                         -- -> StringIds.id
);
CREATE TABLE CUPTI_ACTIVITY_KIND_OPENACC_LAUNCH (
    start                           INTEGER NOT NULL,
    end                             INTEGER NOT NULL,
    nameId                          INTEGER NOT NULL,
    globalTid                       INTEGER,
    eventKind                       INTEGER NOT NULL,
    DeviceType                      INTEGER NOT NULL,
    lineNo                          INTEGER NOT NULL,
    cuDeviceId                      INTEGER NOT NULL,
    cuContextId                     INTEGER NOT NULL,
    cuStreamId                      INTEGER NOT NULL,
    srcFile                         INTEGER,
    funcName                        INTEGER,
    correlationId                   INTEGER,                        -- UNCERTAIN (doc 3.28.1 only)
    numGangs                        INTEGER,
    numWorkers                      INTEGER,
    vectorLength                    INTEGER,
    kernelName                      INTEGER                         -- -> StringIds.id
);
CREATE TABLE CUPTI_ACTIVITY_KIND_OPENACC_OTHER (
    start                           INTEGER NOT NULL,
    end                             INTEGER NOT NULL,
    nameId                          INTEGER NOT NULL,
    globalTid                       INTEGER,
    eventKind                       INTEGER NOT NULL,
    DeviceType                      INTEGER NOT NULL,
    lineNo                          INTEGER NOT NULL,
    cuDeviceId                      INTEGER NOT NULL,
    cuContextId                     INTEGER NOT NULL,
    cuStreamId                      INTEGER NOT NULL,
    srcFile                         INTEGER,
    funcName                        INTEGER,
    correlationId                   INTEGER                         -- UNCERTAIN (doc 3.28.1 only)
);

-- OpenMP: 18 tables, observed in a real export, schema 3.0.0; column lists identical in [doc 3.28.1].
-- Common prefix: start, end, eventClass (78 = OpenMP), globalTid, correlationId (unused), nameId, eventKind (-> ENUM_OPENMP_EVENT_KIND).
CREATE TABLE OPENMP_EVENT_KIND_THREAD (
    start                           INTEGER NOT NULL,
    end                             INTEGER NOT NULL,
    eventClass                      INTEGER NOT NULL,
    globalTid                       INTEGER,
    correlationId                   INTEGER,
    nameId                          INTEGER NOT NULL,
    eventKind                       INTEGER,
    threadId                        INTEGER,
    threadType                      INTEGER
);
CREATE TABLE OPENMP_EVENT_KIND_PARALLEL (
    start                           INTEGER NOT NULL,
    end                             INTEGER NOT NULL,
    eventClass                      INTEGER NOT NULL,
    globalTid                       INTEGER,
    correlationId                   INTEGER,
    nameId                          INTEGER NOT NULL,
    eventKind                       INTEGER,
    parallelId                      INTEGER,
    parentTaskId                    INTEGER
);
CREATE TABLE OPENMP_EVENT_KIND_SYNC_REGION_WAIT (
    start                           INTEGER NOT NULL,
    end                             INTEGER NOT NULL,
    eventClass                      INTEGER NOT NULL,
    globalTid                       INTEGER,
    correlationId                   INTEGER,
    nameId                          INTEGER NOT NULL,
    eventKind                       INTEGER,
    parallelId                      INTEGER,
    taskId                          INTEGER,
    kind                            INTEGER
);
CREATE TABLE OPENMP_EVENT_KIND_SYNC_REGION (
    start                           INTEGER NOT NULL,
    end                             INTEGER NOT NULL,
    eventClass                      INTEGER NOT NULL,
    globalTid                       INTEGER,
    correlationId                   INTEGER,
    nameId                          INTEGER NOT NULL,
    eventKind                       INTEGER,
    parallelId                      INTEGER,
    taskId                          INTEGER,
    kind                            INTEGER
);
CREATE TABLE OPENMP_EVENT_KIND_TASK (
    start                           INTEGER NOT NULL,
    end                             INTEGER NOT NULL,
    eventClass                      INTEGER NOT NULL,
    globalTid                       INTEGER,
    correlationId                   INTEGER,
    nameId                          INTEGER NOT NULL,
    eventKind                       INTEGER,
    parallelId                      INTEGER,
    taskId                          INTEGER,
    kind                            INTEGER
);
CREATE TABLE OPENMP_EVENT_KIND_MASTER (
    start                           INTEGER NOT NULL,
    end                             INTEGER NOT NULL,
    eventClass                      INTEGER NOT NULL,
    globalTid                       INTEGER,
    correlationId                   INTEGER,
    nameId                          INTEGER NOT NULL,
    eventKind                       INTEGER,
    parallelId                      INTEGER,
    taskId                          INTEGER
);
CREATE TABLE OPENMP_EVENT_KIND_REDUCTION (
    start                           INTEGER NOT NULL,
    end                             INTEGER NOT NULL,
    eventClass                      INTEGER NOT NULL,
    globalTid                       INTEGER,
    correlationId                   INTEGER,
    nameId                          INTEGER NOT NULL,
    eventKind                       INTEGER,
    parallelId                      INTEGER,
    taskId                          INTEGER
);
CREATE TABLE OPENMP_EVENT_KIND_TASK_CREATE (
    start                           INTEGER NOT NULL,
    end                             INTEGER NOT NULL,
    eventClass                      INTEGER NOT NULL,
    globalTid                       INTEGER,
    correlationId                   INTEGER,
    nameId                          INTEGER NOT NULL,
    eventKind                       INTEGER,
    parentTaskId                    INTEGER,
    newTaskId                       INTEGER
);
CREATE TABLE OPENMP_EVENT_KIND_TASK_SCHEDULE (
    start                           INTEGER NOT NULL,
    end                             INTEGER NOT NULL,
    eventClass                      INTEGER NOT NULL,
    globalTid                       INTEGER,
    correlationId                   INTEGER,
    nameId                          INTEGER NOT NULL,
    eventKind                       INTEGER,
    parallelId                      INTEGER,
    priorTaskId                     INTEGER,
    priorTaskStatus                 INTEGER,
    nextTaskId                      INTEGER
);
CREATE TABLE OPENMP_EVENT_KIND_CANCEL (
    start                           INTEGER NOT NULL,
    end                             INTEGER NOT NULL,
    eventClass                      INTEGER NOT NULL,
    globalTid                       INTEGER,
    correlationId                   INTEGER,
    nameId                          INTEGER NOT NULL,
    eventKind                       INTEGER,
    taskId                          INTEGER
);
CREATE TABLE OPENMP_EVENT_KIND_MUTEX_WAIT (
    start                           INTEGER NOT NULL,
    end                             INTEGER NOT NULL,
    eventClass                      INTEGER NOT NULL,
    globalTid                       INTEGER,
    correlationId                   INTEGER,
    nameId                          INTEGER NOT NULL,
    eventKind                       INTEGER,
    kind                            INTEGER,
    waitId                          INTEGER,
    taskId                          INTEGER
);
CREATE TABLE OPENMP_EVENT_KIND_CRITICAL_SECTION (
    start                           INTEGER NOT NULL,
    end                             INTEGER NOT NULL,
    eventClass                      INTEGER NOT NULL,
    globalTid                       INTEGER,
    correlationId                   INTEGER,
    nameId                          INTEGER NOT NULL,
    eventKind                       INTEGER,
    kind                            INTEGER,
    waitId                          INTEGER
);
CREATE TABLE OPENMP_EVENT_KIND_MUTEX_RELEASED (
    start                           INTEGER NOT NULL,
    end                             INTEGER NOT NULL,
    eventClass                      INTEGER NOT NULL,
    globalTid                       INTEGER,
    correlationId                   INTEGER,
    nameId                          INTEGER NOT NULL,
    eventKind                       INTEGER,
    kind                            INTEGER,
    waitId                          INTEGER,
    taskId                          INTEGER
);
CREATE TABLE OPENMP_EVENT_KIND_LOCK_INIT (
    start                           INTEGER NOT NULL,
    end                             INTEGER NOT NULL,
    eventClass                      INTEGER NOT NULL,
    globalTid                       INTEGER,
    correlationId                   INTEGER,
    nameId                          INTEGER NOT NULL,
    eventKind                       INTEGER,
    kind                            INTEGER,
    waitId                          INTEGER
);
CREATE TABLE OPENMP_EVENT_KIND_LOCK_DESTROY (
    start                           INTEGER NOT NULL,
    end                             INTEGER NOT NULL,
    eventClass                      INTEGER NOT NULL,
    globalTid                       INTEGER,
    correlationId                   INTEGER,
    nameId                          INTEGER NOT NULL,
    eventKind                       INTEGER,
    kind                            INTEGER,
    waitId                          INTEGER
);
CREATE TABLE OPENMP_EVENT_KIND_WORKSHARE (
    start                           INTEGER NOT NULL,
    end                             INTEGER NOT NULL,
    eventClass                      INTEGER NOT NULL,
    globalTid                       INTEGER,
    correlationId                   INTEGER,
    nameId                          INTEGER NOT NULL,
    eventKind                       INTEGER,
    kind                            INTEGER,
    parallelId                      INTEGER,
    taskId                          INTEGER,
    count                           INTEGER
);
CREATE TABLE OPENMP_EVENT_KIND_DISPATCH (
    start                           INTEGER NOT NULL,
    end                             INTEGER NOT NULL,
    eventClass                      INTEGER NOT NULL,
    globalTid                       INTEGER,
    correlationId                   INTEGER,
    nameId                          INTEGER NOT NULL,
    eventKind                       INTEGER,
    kind                            INTEGER,
    parallelId                      INTEGER,
    taskId                          INTEGER
);
CREATE TABLE OPENMP_EVENT_KIND_FLUSH (
    start                           INTEGER NOT NULL,
    end                             INTEGER NOT NULL,
    eventClass                      INTEGER NOT NULL,
    globalTid                       INTEGER,
    correlationId                   INTEGER,
    nameId                          INTEGER NOT NULL,
    eventKind                       INTEGER,
    threadId                        INTEGER
);

-- -------------------------------------------------------------------------------------
-- G. OS runtime (incl. pthreads), scheduling, CPU sampling
-- -------------------------------------------------------------------------------------

-- OSRT_API: observed in a real export, schema 3.24.0
CREATE TABLE OSRT_API (
    start                           INTEGER NOT NULL,               -- ns since session start
    end                             INTEGER NOT NULL,               -- ns since session start
    eventClass                      INTEGER NOT NULL,               -- 27 = OSRT call; 31/32 = start/finish markers (filter them out)
    globalTid                       INTEGER,                        -- packed global thread id (see header)
    nameId                          INTEGER NOT NULL,               -- -> StringIds.id
    returnValue                     INTEGER NOT NULL,
    nestingLevel                    INTEGER,                        -- 0 = outermost
    callchainId                     INTEGER NOT NULL,               -- -> *_CALLCHAINS.id
    argumentsId                     INTEGER NOT NULL                -- [+3.23.x] -> OSRT_ARGUMENTS.id (experimental)
);

-- OSRT_CALLCHAINS: observed in a real export, schema 3.24.0
CREATE TABLE OSRT_CALLCHAINS (
    id                              INTEGER NOT NULL,
    symbol                          INTEGER NOT NULL,               -- -> StringIds.id
    module                          INTEGER NOT NULL,               -- -> StringIds.id
    kernelMode                      INTEGER,
    thumbCode                       INTEGER,
    unresolved                      INTEGER,
    specialEntry                    INTEGER,
    originalIP                      INTEGER,
    unwindMethod                    INTEGER,                        -- -> ENUM_STACK_UNWIND_METHOD.id
    stackDepth                      INTEGER NOT NULL,
    PRIMARY KEY (id, stackDepth)
);

-- OSRT_ARGUMENTS: [doc 3.28.1], experimental; referenced by OSRT_API.argumentsId (3.23+). Not observed in samples.
CREATE TABLE OSRT_ARGUMENTS (
    id                              INTEGER NOT NULL,
    value                           INTEGER NOT NULL,
    argumentIndex                   INTEGER NOT NULL,
    PRIMARY KEY (id, argumentIndex)
);

-- OSRT_FILE_ACCESS_EVENTS: observed in a real export, schema 3.24.0
CREATE TABLE OSRT_FILE_ACCESS_EVENTS (
    fileAccessId                    INTEGER NOT NULL,               -- -> OSRT_FILE_ACCESS_DESCRIPTORS.fileAccessId
    threadId                        INTEGER NOT NULL,               -- plain OS tid (not packed)
    startedAt                       INTEGER NOT NULL,
    endedAt                         INTEGER NOT NULL,
    eventType                       INTEGER NOT NULL,               -- -> ENUM_OSRT_FILE_ACCESS_EVENT_TYPE.id
    apiCallId                       INTEGER NOT NULL,               -- -> StringIds.id
    bytesProcessed                  INTEGER NOT NULL
    -- , context TEXT NOT NULL   -- added in 3.24.14; NOT NULL
);

-- OSRT_FILE_ACCESS_DESCRIPTORS: observed in a real export, schema 3.24.0
CREATE TABLE OSRT_FILE_ACCESS_DESCRIPTORS (
    fileAccessId                    INTEGER NOT NULL,
    processId                       INTEGER NOT NULL,               -- plain OS pid
    openedAt                        INTEGER NOT NULL,
    closedAt                        INTEGER NOT NULL,
    filePath                        TEXT NOT NULL
);

-- SCHED_EVENTS: observed in a real export, schema 3.24.0
CREATE TABLE SCHED_EVENTS (
    start                           INTEGER NOT NULL,               -- ns since session start
    cpu                             INTEGER NOT NULL,
    isSchedIn                       INTEGER NOT NULL,               -- 0 = switched out
    globalTid                       INTEGER,                        -- packed global thread id (see header)
    threadState                     INTEGER,                        -- [+3.13.x] -> ENUM_SAMPLING_THREAD_STATE.id
    threadBlock                     INTEGER                         -- [+3.13.x] -> ENUM_SCHEDULING_THREAD_BLOCK.id
);

-- COMPOSITE_EVENTS: observed in a real export, schema 3.24.0
CREATE TABLE COMPOSITE_EVENTS (
    id                              INTEGER NOT NULL PRIMARY KEY,
    start                           INTEGER NOT NULL,               -- ns since session start
    cpu                             INTEGER,
    threadState                     INTEGER,                        -- -> ENUM_SAMPLING_THREAD_STATE.id
    globalTid                       INTEGER,                        -- packed global thread id (see header)
    cpuCycles                       INTEGER NOT NULL
);

-- SAMPLING_CALLCHAINS: observed in a real export, schema 3.24.0
CREATE TABLE SAMPLING_CALLCHAINS (
    id                              INTEGER NOT NULL,               -- -> COMPOSITE_EVENTS.id
    symbol                          INTEGER NOT NULL,               -- -> StringIds.id
    module                          INTEGER NOT NULL,               -- -> StringIds.id
    kernelMode                      INTEGER,
    thumbCode                       INTEGER,
    unresolved                      INTEGER,
    specialEntry                    INTEGER,
    originalIP                      INTEGER,
    unwindMethod                    INTEGER,                        -- -> ENUM_STACK_UNWIND_METHOD.id
    stackDepth                      INTEGER NOT NULL,
    PRIMARY KEY (id, stackDepth)
);

-- -------------------------------------------------------------------------------------
-- H. GPU hardware metrics (nsys --gpu-metrics-devices=...)
-- -------------------------------------------------------------------------------------
-- Current representation ([doc 3.28.1]; used by nsys2prv for schema 3.11-3.20). Not observed in a real sample.
CREATE TABLE TARGET_INFO_GPU_METRICS (
    typeId                          INTEGER NOT NULL,               -- composite; gpu id = typeId & 0xFF
    sourceId                        INTEGER NOT NULL,               -- -> GENERIC_EVENT_SOURCES.sourceId
    typeName                        TEXT NOT NULL,                  -- metric-set / event-type name
    metricId                        INTEGER NOT NULL,               -- NOT stable across GPUs/versions
    metricName                      TEXT NOT NULL                   -- e.g. 'SMs Active [Throughput %]'
);
CREATE TABLE GPU_METRICS (
    rawTimestamp                    INTEGER NOT NULL,               -- UNCERTAIN: listed first in doc 3.28.1; may be absent in older exports
    timestamp                       INTEGER NOT NULL,               -- ns, session timeline; can be negative
    typeId                          INTEGER NOT NULL,               -- join TARGET_INFO_GPU_METRICS on (typeId, metricId)
    metricId                        INTEGER NOT NULL,
    value                           INTEGER NOT NULL                -- integer sample value
);
-- Generic-event tables ([doc 3.28.1] column set; older exports have fewer columns, see NSYS_SQLITE.md).
-- Legacy GPU-metrics representation (reports up to ~2023.x): GENERIC_EVENT_SOURCES row whose JSON `data` has
-- "Name":"GpuMetrics", GENERIC_EVENT_TYPES rows for that source, and GENERIC_EVENTS rows whose `data` is a JSON
-- object {"<metric name>": value, ...} per sample.
CREATE TABLE GENERIC_EVENT_SOURCES (
    sourceId                        INTEGER NOT NULL PRIMARY KEY,
    nameId                          INTEGER NOT NULL,
    timeSourceId                    INTEGER NOT NULL,               -- -> ENUM_NSYS_GENERIC_EVENT_SOURCE.id
    sourceGroupId                   INTEGER NOT NULL,               -- -> ENUM_NSYS_GENERIC_EVENT_GROUP.id
    hyperType                       TEXT,
    hyperVersion                    TEXT,
    hyperStructPrefix               TEXT,
    hyperMacroPrefix                TEXT,
    hyperFilterFlags                INTEGER,
    hyperDomain                     TEXT,
    data                            TEXT                            -- JSON description
);
CREATE TABLE GENERIC_EVENT_TYPES (
    typeId                          INTEGER NOT NULL PRIMARY KEY,
    sourceId                        INTEGER NOT NULL,
    nameId                          INTEGER NOT NULL,
    hyperComment                    TEXT,
    ftraceFormat                    TEXT,
    etwProviderId                   INTEGER,
    etwProviderNameId               INTEGER,
    etwTaskId                       INTEGER,
    etwTaskNameId                   INTEGER,
    etwEventId                      INTEGER,
    etwVersion                      INTEGER,
    etwGuidHigh                     INTEGER,
    etwGuidLow                      INTEGER,
    etwGuid                         TEXT,
    data                            TEXT                            -- JSON description
);
CREATE TABLE GENERIC_EVENTS (
    genericEventId                  INTEGER NOT NULL PRIMARY KEY,   -- UNCERTAIN for older exports
    rawTimestamp                    INTEGER NOT NULL,
    timestamp                       INTEGER NOT NULL,               -- older exports: may be NULL
    typeId                          INTEGER NOT NULL,               -- <HW:8><VM:8><Source:16><Type:32>; gpu = typeId & 0xFF
    globalTid                       INTEGER,                        -- UNCERTAIN for older exports
    data                            TEXT                            -- JSON
);

-- -------------------------------------------------------------------------------------
-- I. Network: UCX, NIC / InfiniBand ([doc 3.28.1] unless noted)
-- -------------------------------------------------------------------------------------
CREATE TABLE UCP_WORKERS (
    globalTid                       INTEGER NOT NULL,
    workerUid                       INTEGER NOT NULL
);
CREATE TABLE UCP_SUBMIT_EVENTS (
    start                           INTEGER NOT NULL,
    end                             INTEGER,
    globalTid                       INTEGER,
    textId                          INTEGER,                        -- -> StringIds.id (ucp_* function)
    bufferAddr                      INTEGER,
    packedSize                      INTEGER,
    peerWorkerUid                   INTEGER,                        -- -> UCP_WORKERS.workerUid of the peer
    tag                             INTEGER
);
CREATE TABLE UCP_PROGRESS_EVENTS (
    start                           INTEGER NOT NULL,
    end                             INTEGER,
    globalTid                       INTEGER,
    textId                          INTEGER,
    bufferAddr                      INTEGER,
    packedSize                      INTEGER,
    peerWorkerUid                   INTEGER,
    tag                             INTEGER
);
CREATE TABLE UCP_EVENTS (
    start                           INTEGER NOT NULL,
    end                             INTEGER,
    globalTid                       INTEGER,
    textId                          INTEGER
);

-- TARGET_INFO_NIC_INFO: observed in a real export, schema 3.23.3 (newest sample <= 3.24.0)
CREATE TABLE TARGET_INFO_NIC_INFO (
    GUID                            INTEGER NOT NULL,               -- [3.23.x: renamed from globalId]
    stateName                       TEXT NOT NULL,
    nicId                           INTEGER NOT NULL,
    name                            TEXT NOT NULL,
    deviceId                        INTEGER NOT NULL,               -- -> ENUM_NET_DEVICE_ID.id
    vendorId                        INTEGER NOT NULL,               -- -> ENUM_NET_VENDOR_ID.id
    linkLayer                       INTEGER NOT NULL                -- -> ENUM_NET_LINK_TYPE.id
);

CREATE TABLE NIC_ID_MAP (
    nicId                           INTEGER NOT NULL,               -- -> TARGET_INFO_NIC_INFO.nicId
    globalId                        INTEGER NOT NULL                -- -> NET_NIC_METRIC.globalId
);
CREATE TABLE TARGET_INFO_NETWORK_METRICS (
    metricsListId                   INTEGER NOT NULL,
    metricsIdx                      INTEGER NOT NULL,
    name                            TEXT NOT NULL,
    description                     TEXT NOT NULL,
    unit                            TEXT NOT NULL
);
CREATE TABLE NET_NIC_METRIC (
    start                           INTEGER NOT NULL,
    end                             INTEGER NOT NULL,
    globalId                        INTEGER NOT NULL,
    portId                          INTEGER NOT NULL,
    metricsListId                   INTEGER NOT NULL,               -- -> TARGET_INFO_NETWORK_METRICS (with metricsIdx)
    metricsIdx                      INTEGER NOT NULL,
    value                           INTEGER NOT NULL
);

-- -------------------------------------------------------------------------------------
-- J. Legacy variants, for fixtures that emulate OLDER exports (do not create together with the above)
-- -------------------------------------------------------------------------------------
-- Schema 2.9.1 .. 3.1.2 (nsys 2022.1 .. 2023.1): metadata table is EXPORT_META_DATA (same name/value shape);
-- META_DATA_EXPORT + META_DATA_CAPTURE appear from 3.4.0 (nsys 2023.3).
-- CREATE TABLE EXPORT_META_DATA (name TEXT NOT NULL, value TEXT);
--
-- Schema <= 3.4.0 (nsys <= 2023.3): TARGET_INFO_CUDA_NULL_STREAM instead of TARGET_INFO_CUDA_CONTEXT_INFO.
-- CREATE TABLE TARGET_INFO_CUDA_NULL_STREAM (streamId INTEGER NOT NULL, hwId INTEGER NOT NULL, vmId INTEGER NOT NULL,
--     processId INTEGER NOT NULL, deviceId INTEGER NOT NULL, contextId INTEGER NOT NULL);
--
-- Schema 2.9.1 / 3.0.0: a single graph-node table under the name CUDA_GRAPH_EVENTS.
-- CREATE TABLE CUDA_GRAPH_EVENTS (start INTEGER NOT NULL, end INTEGER NOT NULL, eventClass INTEGER NOT NULL,
--     globalTid INTEGER, nameId INTEGER NOT NULL, graphNodeId INTEGER NOT NULL, originalGraphNodeId INTEGER);
--
-- Schema 2.9.1 / 3.0.0: unwind-method lookup table (later ENUM_STACK_UNWIND_METHOD).
-- CREATE TABLE UnwindMethodType (number INTEGER PRIMARY KEY, name TEXT NOT NULL);
--
-- Schema <= 3.23.3: PROFILER_OVERHEAD has returnValue INTEGER NOT NULL in place of overheadType.
-- Schema <= 3.13.2: ANALYSIS_FILE has `content TEXT` in place of contentId.
-- Schema <= 3.20.x: TARGET_INFO_NIC_INFO has `globalId` in place of GUID; OSRT_API has no argumentsId;
--                   KERNEL lacks qmd*/graphId/cluster* columns.
-- Schema <= 3.16.x: MEMCPY lacks copyCount; SYNCHRONIZATION lacks deprecatedSyncType, eventSyncId.
-- Schema <= 3.7.x : SCHED_EVENTS has only (start, cpu, isSchedIn, globalTid).
-- Schema <= 3.4.0 : no greenContextId in KERNEL/MEMCPY/MEMSET/SYNCHRONIZATION/CUDA_EVENT.
-- Schema 2.9.1    : no ENUM_* tables at all; CUDA_GPU_MEMORY_USAGE_EVENTS lacks the memory-pool columns.
-- nsys 2021.1 .. 2021.3.0: GPU table named TARGET_INFO_CUDA_GPU keyed by deviceId (UNVERIFIED column list);
--   older exporters declared every column NOT NULL and wrote default values (0) instead of NULL.

