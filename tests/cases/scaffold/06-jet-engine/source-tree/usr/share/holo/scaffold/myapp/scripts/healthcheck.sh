#!/bin/bash
curl -sf http://localhost:[[ data.port ]]/health || exit 1
