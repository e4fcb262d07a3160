# Precompiled headers for the targets whose TUs all parse the same heavy headers (nlohmann-json in core
# and the engine, GoogleTest in the tests, Qt in app/ and its tests): docs/building.md, "Build time",
# has the figures.
#
# ccache cannot cache a compile that uses a precompiled header unless its sloppiness allows it
# (pch_defines,time_macros), so a build configured with ccache as the compiler launcher leaves them off
# by default and keeps its cache hits; so does the fuzz build (clang refuses a precompiled header built
# without the sanitizer flags core gets there). -DPKBW_PRECOMPILED_HEADERS=ON/OFF decides either way.
if(CMAKE_CXX_COMPILER_LAUNCHER MATCHES "ccache" OR PKBW_BUILD_FUZZ)
    set(pkbw_pch_default OFF)
else()
    set(pkbw_pch_default ON)
endif()
option(PKBW_PRECOMPILED_HEADERS "Precompile the heavy common headers (off by default under ccache)"
       ${pkbw_pch_default})
set(PKBW_PCH_ANCHOR_DIR ${CMAKE_CURRENT_LIST_DIR})

# The standard headers nearly every pkbw TU includes, and nlohmann-json (2 s of parsing per TU at -O2).
set(PKBW_PCH_COMMON_HEADERS <nlohmann/json.hpp> <algorithm> <cstdint> <filesystem> <functional> <map>
    <memory> <optional> <set> <stdexcept> <string> <string_view> <utility> <vector>)

# The Qt headers most of app/'s views include, for app/ and its tests (QCustomPlot's, which pulls in
# every Qt module, stays out: six TUs include it).
set(PKBW_PCH_QT_HEADERS <QAbstractTableModel> <QComboBox> <QDir> <QFileInfo> <QHBoxLayout> <QHeaderView>
    <QLabel> <QPainter> <QPlainTextEdit> <QPushButton> <QSplitter> <QString> <QTabWidget> <QTableWidget>
    <QTimer> <QVBoxLayout> <QWidget>)

# pkbw_precompile_headers(TARGET [HEADERS <h>...]): TARGET's C++ sources get the common headers (and
# HEADERS) precompiled; a source can opt out with the SKIP_PRECOMPILE_HEADERS source property.
function(pkbw_precompile_headers target)
    if(NOT PKBW_PRECOMPILED_HEADERS)
        return()
    endif()
    cmake_parse_arguments(ARG "" "" "HEADERS" ${ARGN})
    set(headers)
    foreach(header IN LISTS PKBW_PCH_COMMON_HEADERS ARG_HEADERS)
        list(APPEND headers "$<$<COMPILE_LANGUAGE:CXX>:${header}>")
    endforeach()
    target_precompile_headers(${target} PRIVATE ${headers})
endfunction()

# pkbw_add_pch_anchor(NAME LIBRARY|EXECUTABLE [HEADERS <h>...] [LIBS <lib>...]): a target that only
# compiles a precompiled header for others to reuse. gcc uses a precompiled header only where every
# macro defined when it was built is defined the same (a target's private PKBW_* definitions would
# make it useless elsewhere) and with the same -fPIC/-fPIE, so the anchor has no definitions but
# its LIBS' and is of the kind of the targets that reuse it (LIBRARY: -fPIC, EXECUTABLE: -fPIE).
function(pkbw_add_pch_anchor name kind)
    if(NOT PKBW_PRECOMPILED_HEADERS)
        return()
    endif()
    cmake_parse_arguments(ARG "" "" "HEADERS;LIBS" ${ARGN})
    if(kind STREQUAL "EXECUTABLE")
        add_executable(${name} ${PKBW_PCH_ANCHOR_DIR}/pch_anchor_main.cpp)
    else()
        add_library(${name} OBJECT ${PKBW_PCH_ANCHOR_DIR}/pch_anchor.cpp)
    endif()
    target_link_libraries(${name} PRIVATE ${ARG_LIBS})
    pkbw_precompile_headers(${name} HEADERS ${ARG_HEADERS})
endfunction()

# pkbw_reuse_precompiled_headers(TARGET FROM): TARGET's sources use FROM's precompiled header.
function(pkbw_reuse_precompiled_headers target from)
    if(PKBW_PRECOMPILED_HEADERS)
        target_precompile_headers(${target} REUSE_FROM ${from})
    endif()
endfunction()
