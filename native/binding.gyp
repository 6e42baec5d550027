# The N-API addon for the Linux syscalls Node lacks (setns, SO_MARK, IP_TRANSPARENT, SO_ORIGINAL_DST,
# SEQPACKET with SCM_RIGHTS). Built at `npm ci` by native/build.mjs; loaded only by src/native/native.ts.
{
  'targets': [
    {
      'target_name': 'amesh_native',
      'sources': [
        'src/addon.cc',
        'src/errno-error.cc',
        'src/args.cc',
        'src/netns.cc',
        'src/inet-sockets.cc',
        'src/seqpacket.cc',
        'src/fd-watcher.cc',
      ],
      # C++ exceptions let RAII guards put the thread back in its own netns on every path.
      'dependencies': ["<!(node -p \"require('node-addon-api').targets\"):node_addon_api_except"],
      'defines': ['NAPI_VERSION=8'],
      'cflags_cc': ['-std=c++17', '-Wall', '-Wextra'],
    },
  ],
}
