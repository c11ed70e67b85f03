#!/bin/sh
echo {{ data.greeting }}
